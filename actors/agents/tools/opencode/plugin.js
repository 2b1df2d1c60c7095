// session-state-awareness: OpenCode plugin (opencode-ai 1.18).
//
// On each prompt of a top-level session ("chat.message") it runs `ssa hook opencode`
// once, with {"session_id", "cwd", "hook_event_name"} on stdin, and keeps what the
// hook printed for that session's turn. "experimental.chat.system.transform" runs before
// every model request of the turn (each step of the agent loop, and side requests such
// as title generation); it adds the kept text to output.system, so the notice is read
// (and acknowledged by the hook) once per turn and no side request can use it up. The
// text is dropped when the session goes idle. Any failure: nothing is added, nothing
// thrown.
//
// Wake (issue 35): for each top-level session it serves it keeps one waiting hook,
// `ssa hook opencode --wait`, started at the session's prompt and when it goes idle. The
// waiting hook ends at once for a worker; for a manager it stays until OpenCode exits and
// prints one JSON line {"text"} per notice that opens for it, which the plugin sends into
// the session with `session.promptAsync` as a synthetic part: an idle session takes a turn,
// a busy one gets it at its next model request. ssa never counts a synthetic part as typed.
import { spawn } from "node:child_process"

const HOOK_ARGV = ["__SSA_HOOK_ARGV__"]
const TIMEOUT_MS = __SSA_HOOK_TIMEOUT_MS__
const MAX_OUTPUT_CHARS = 64 * 1024

function runHook(input) {
  return new Promise((resolve) => {
    let child
    try {
      child = spawn(HOOK_ARGV[0], HOOK_ARGV.slice(1), { stdio: ["pipe", "pipe", "ignore"], detached: true })
    } catch {
      resolve("")
      return
    }
    let out = ""
    let settled = false
    const finish = (text) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(text)
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL") // the hook and anything it started
      } catch {
        try {
          child.kill("SIGKILL")
        } catch {}
      }
      try {
        child.stdout.destroy()
        child.unref()
      } catch {}
      finish("")
    }, TIMEOUT_MS)
    child.on("error", () => finish(""))
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk) => {
      if (out.length < MAX_OUTPUT_CHARS) out += chunk
    })
    child.on("close", (code) => finish(code === 0 ? out : ""))
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(input))
  })
}

function startWaiter(waiters, client, sessionID, directory) {
  if (waiters.has(sessionID) || HOOK_ARGV.includes("--no-wake")) return
  // `opencode run` ends after its prompt: no waiting hook there.
  if (process.argv.includes("run")) return
  let child
  try {
    child = spawn(HOOK_ARGV[0], [...HOOK_ARGV.slice(1), "--wait"], { stdio: ["pipe", "pipe", "ignore"] })
  } catch {
    return
  }
  waiters.set(sessionID, child)
  // Never keep OpenCode running for the waiting hook's sake (it ends with OpenCode by itself).
  try {
    child.unref()
    child.stdout?.unref?.()
    child.stdin?.unref?.()
  } catch {}
  let pending = ""
  child.on("error", () => waiters.delete(sessionID))
  child.on("close", () => {
    if (waiters.get(sessionID) === child) waiters.delete(sessionID)
  })
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (chunk) => {
    pending += chunk
    if (pending.length > MAX_OUTPUT_CHARS * 4) pending = ""
    let end
    while ((end = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, end)
      pending = pending.slice(end + 1)
      let text
      try {
        text = JSON.parse(line)?.text
      } catch {
        continue
      }
      if (typeof text !== "string" || !text) continue
      Promise.resolve(client?.session?.promptAsync?.({
        path: { id: sessionID },
        body: { parts: [{ type: "text", text, synthetic: true }] },
      })).catch(() => {})
    }
  })
  child.stdin.on("error", () => {})
  // The input's line, then the pipe stays open: "idle" at each turn's end lets the waiting
  // hook hand over the next notice (one push per notice, not one per change).
  child.stdin.write(JSON.stringify({ session_id: sessionID, cwd: directory, hook_event_name: "ssa-push" }) + "\n")
}

function turnEnded(waiters, sessionID) {
  try {
    waiters.get(sessionID)?.stdin?.write("idle\n")
  } catch {}
}

async function isSubSession(client, sessionID) {
  try {
    const got = await client?.session?.get?.({ path: { id: sessionID } })
    return Boolean(got?.data?.parentID)
  } catch {
    return false
  }
}

export const SsaNotices = async ({ client, directory }) => {
  const turns = new Map() // sessionID -> text of this turn's notices
  const waiters = new Map() // sessionID -> its waiting hook (a child process)
  return {
    "chat.message": async (input, _output) => {
      try {
        const sessionID = input?.sessionID
        if (!sessionID) return
        turns.delete(sessionID)
        if (await isSubSession(client, sessionID)) return // a sub-agent's task, not a turn
        const text = (await runHook({
          session_id: sessionID,
          cwd: directory,
          hook_event_name: "experimental.chat.system.transform",
        })).trim()
        if (text) turns.set(sessionID, text)
        startWaiter(waiters, client, sessionID, directory)
      } catch {}
    },
    "experimental.chat.system.transform": async (input, output) => {
      try {
        const text = input?.sessionID ? turns.get(input.sessionID) : undefined
        if (text && Array.isArray(output?.system)) output.system.push(text)
      } catch {}
    },
    event: async ({ event }) => {
      try {
        if (event?.type === "session.idle") {
          const sessionID = event.properties?.sessionID
          turns.delete(sessionID)
          if (sessionID && !(await isSubSession(client, sessionID))) {
            turnEnded(waiters, sessionID)
            startWaiter(waiters, client, sessionID, directory)
          }
        }
      } catch {}
    },
  }
}
