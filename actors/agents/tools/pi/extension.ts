// session-state-awareness: Pi extension (@mariozechner/pi-coding-agent 0.73).
//
// Before each agent run (`before_agent_start`, once per prompt) it runs `ssa hook pi`
// with {"session_id", "session_file", "cwd", "hook_event_name"} on stdin and, when the
// hook printed something, returns it as a custom message ("ssa-notice", not displayed)
// that Pi stores in the session and sends to the model with the prompt. Any failure:
// nothing is added, nothing thrown.
//
// It also records where each prompt came from, never its text: at `message_end` of a
// user message (before Pi stores it) it adds `ssaInput: {v: 1, source, ui}` to the
// message, where `source` is the `input` event's source ("interactive", "rpc",
// "extension"; null if no input event was seen) and `ui` is `ctx.hasUI` (false in
// print mode `pi -p` and SDK runs). `ssa` decides a prompt a program sent as not typed.
//
// Wake (issue 35): it keeps one waiting hook, `ssa hook pi --wait`, for the session, started
// when the session starts, at each prompt and at each run's end. It ends at once for a
// worker; for a manager it stays until Pi exits and prints one JSON line {"text"} per notice
// that opens for it, which the extension sends with `pi.sendMessage` (a custom message, shown,
// triggering a turn when Pi is idle, steering the running one otherwise). ssa never counts a
// custom message as typed.
import { spawn } from "node:child_process";

const HOOK_ARGV: string[] = ["__SSA_HOOK_ARGV__"];
const TIMEOUT_MS = __SSA_HOOK_TIMEOUT_MS__;
const MAX_OUTPUT_CHARS = 64 * 1024;

function runHook(input: unknown): Promise<string> {
  return new Promise((resolve) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(HOOK_ARGV[0], HOOK_ARGV.slice(1), { stdio: ["pipe", "pipe", "ignore"], detached: true });
    } catch {
      resolve("");
      return;
    }
    let out = "";
    let settled = false;
    const finish = (text: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(text);
    };
    const timer = setTimeout(() => {
      try {
        process.kill(-(child.pid as number), "SIGKILL"); // the hook and anything it started
      } catch {
        try {
          child.kill("SIGKILL");
        } catch {}
      }
      try {
        child.stdout?.destroy();
        child.unref();
      } catch {}
      finish("");
    }, TIMEOUT_MS);
    child.on("error", () => finish(""));
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      if (out.length < MAX_OUTPUT_CHARS) out += chunk;
    });
    child.on("close", (code: number | null) => finish(code === 0 ? out : ""));
    child.stdin?.on("error", () => {});
    child.stdin?.end(JSON.stringify(input));
  });
}

const MAX_PENDING = 32;

function textOf(message: any): string | null {
  const content = message?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return null;
  return content.filter((p: any) => p?.type === "text" && typeof p.text === "string")
    .map((p: any) => p.text).join("\n");
}

function recordInputSources(pi: any) {
  // The last source of a person's or a client's input in this process ("interactive" or
  // "rpc"), and the texts extensions sent (sendUserMessage stores them unexpanded), kept
  // in memory only until their message is stored.
  let processSource: string | null = null;
  const extensionTexts: string[] = [];
  pi.on("input", (event: any) => {
    try {
      if (event?.source === "extension") {
        if (typeof event.text === "string") extensionTexts.push(event.text);
        if (extensionTexts.length > MAX_PENDING) extensionTexts.shift();
      } else if (typeof event?.source === "string") {
        processSource = event.source;
      }
    } catch {}
    return undefined;
  });
  pi.on("message_end", (event: any, ctx: any) => {
    try {
      const message = event?.message;
      if (message?.role !== "user") return undefined;
      let source = processSource;
      const at = extensionTexts.indexOf(textOf(message) ?? "\u0000");
      if (at >= 0) {
        extensionTexts.splice(at, 1);
        source = "extension";
      }
      return { message: { ...message, ssaInput: { v: 1, source, ui: ctx?.hasUI !== false } } };
    } catch {
      return undefined;
    }
  });
}

function startWaiter(pi: any, waiters: Map<string, any>, ctx: any) {
  const sessions = ctx?.sessionManager;
  const sessionId = sessions?.getSessionId?.();
  // Print mode (`pi -p`) has no UI and ends after its run: no waiting hook there.
  if (!sessionId || waiters.has(sessionId) || HOOK_ARGV.includes("--no-wake")) return;
  if (ctx?.hasUI === false) return;
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(HOOK_ARGV[0], [...HOOK_ARGV.slice(1), "--wait"], { stdio: ["pipe", "pipe", "ignore"] });
  } catch {
    return;
  }
  waiters.set(sessionId, child);
  // Never keep Pi running for the waiting hook's sake (it ends with Pi by itself).
  try {
    child.unref();
    (child.stdout as any)?.unref?.();
    (child.stdin as any)?.unref?.();
  } catch {}
  let pending = "";
  child.on("error", () => waiters.delete(sessionId));
  child.on("close", () => {
    if (waiters.get(sessionId) === child) waiters.delete(sessionId);
  });
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (chunk: string) => {
    pending += chunk;
    if (pending.length > MAX_OUTPUT_CHARS * 4) pending = "";
    let end: number;
    while ((end = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 1);
      let text: unknown;
      try {
        text = JSON.parse(line)?.text;
      } catch {
        continue;
      }
      if (typeof text !== "string" || !text) continue;
      try {
        const idle = ctx?.isIdle?.() !== false;
        pi.sendMessage({ customType: "ssa-notice", content: text, display: true },
          { triggerTurn: true, deliverAs: idle ? "followUp" : "steer" });
      } catch {}
    }
  });
  child.stdin?.on("error", () => {});
  // The input's line, then the pipe stays open: "idle" at each run's end lets the waiting
  // hook hand over the next notice (one push per notice, not one per change).
  child.stdin?.write(JSON.stringify({
    session_id: sessionId,
    session_file: sessions?.getSessionFile?.() ?? null,
    cwd: ctx?.cwd ?? process.cwd(),
    hook_event_name: "ssa-push",
  }) + "\n");
}

function turnEnded(waiters: Map<string, any>, ctx: any) {
  try {
    const sessionId = ctx?.sessionManager?.getSessionId?.();
    if (sessionId) waiters.get(sessionId)?.stdin?.write("idle\n");
  } catch {}
}

export default function ssaNotices(pi: any) {
  recordInputSources(pi);
  const waiters = new Map<string, any>();
  for (const event of ["session_start", "agent_end"]) {
    pi.on(event, (_event: any, ctx: any) => {
      try {
        if (event === "agent_end") turnEnded(waiters, ctx);
        startWaiter(pi, waiters, ctx);
      } catch {}
      return undefined;
    });
  }
  pi.on("before_agent_start", async (_event: any, ctx: any) => {
    try {
      const sessions = ctx?.sessionManager;
      const sessionId = sessions?.getSessionId?.();
      if (!sessionId) return undefined;
      const text = (await runHook({
        session_id: sessionId,
        session_file: sessions?.getSessionFile?.() ?? null,
        cwd: ctx?.cwd ?? process.cwd(),
        hook_event_name: "before_agent_start",
      })).trim();
      startWaiter(pi, waiters, ctx);
      if (!text) return undefined;
      return { message: { customType: "ssa-notice", content: text, display: false } };
    } catch {
      return undefined;
    }
  });
}
