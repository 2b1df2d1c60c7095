// session-state-awareness: Pi extension (@mariozechner/pi-coding-agent 0.73).
//
// Before each agent run (`before_agent_start`, once per prompt) it runs `ssa hook pi`
// with {"session_id", "session_file", "cwd", "hook_event_name"} on stdin and, when the
// hook printed something, returns it as a custom message ("ssa-notice", not displayed)
// that Pi stores in the session and sends to the model with the prompt. Any failure:
// nothing is added, nothing thrown.
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

export default function ssaNotices(pi: any) {
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
      if (!text) return undefined;
      return { message: { customType: "ssa-notice", content: text, display: false } };
    } catch {
      return undefined;
    }
  });
}
