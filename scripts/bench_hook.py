"""Cold start of ``ssa hook claude-code``: what a prompt with nothing pending costs.

The hook runs at every prompt a person submits. Goals (issue 21), each the
p50 of ``--runs`` runs next to a baseline measured in the same run, the
p50 of as many ``python -c "import apsw"`` (the interpreter and the one
C extension the cold path cannot do without):

* a home with a manager and one worker session, nothing pending: at most
  3x the baseline;
* 2,000 adopted sessions of the manager's project across the four tools
  (500 each; no ``ssa watch`` running), nothing pending: at most 5x.

Each hook run gets the real hook input on stdin in a throw-away ``HOME``.
The warm-up runs of each home (which adopt everything, at most
``MAX_ADOPT_PER_RUN`` sessions a run) are not measured; the
baseline and the hook run in turn, so a drifting load weighs on both alike.
Run: ``python -m scripts.bench_hook [--runs 20] [--sessions 2000]``;
``--check`` exits 3 (:data:`scripts.bench.GOAL_MISSED`) if a goal is missed.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from actors.agents.hookplan import MAX_ADOPT_PER_RUN  # noqa: E402 - after the path set-up
from actors.agents.manage import run_manage  # noqa: E402 - after the path set-up
from actors.testing import (  # noqa: E402 - after the path set-up
    ClaudeCodeTranscript,
    CodexRollout,
    OpenCodeTranscript,
    PiSession,
    Reply,
    Typed,
)

GOAL_SMALL = 3.0
GOAL_LARGE = 5.0
GOAL_MISSED = 3


def _ssa() -> list[str]:
    script = Path(sys.executable).with_name("ssa")
    return [str(script)] if script.exists() else [sys.executable, "-m", "actors"]


def _home(root: Path, sessions: int) -> tuple[dict[str, str], bytes]:
    """A throw-away home: a git project, a manager Claude Code session, ``sessions`` workers."""
    project = root / "proj"
    (project / ".git").mkdir(parents=True)
    claude = root / ".claude" / "projects" / str(project).replace("/", "-")
    claude.mkdir(parents=True)
    codex = root / ".codex" / "sessions" / "2026" / "12" / "02"
    codex.mkdir(parents=True)
    pi = root / ".pi" / "agent" / "sessions" / f"--{str(project)[1:].replace('/', '-')}--"
    pi.mkdir(parents=True)
    opencode = root / ".local" / "share" / "opencode"
    opencode.mkdir(parents=True)
    cwd = str(project)
    manager = ClaudeCodeTranscript(claude / f"{uuid.uuid4()}.jsonl", cwd=cwd)
    manager.append(Typed("plan"), Reply("ok"))
    per = max(1, sessions // 4)
    for i in range(per if sessions else 0):
        ClaudeCodeTranscript(claude / f"{uuid.uuid4()}.jsonl", cwd=cwd).append(
            Typed(f"c{i}"), Reply("ok"))
        thread = str(uuid.uuid4())
        CodexRollout(codex / f"rollout-2026-12-02T01-00-00-{thread}.jsonl", thread_id=thread,
                     cwd=cwd).append(Typed(f"x{i}"), Reply("ok"))
        session = str(uuid.uuid4())
        PiSession(pi / f"2026-12-02T01-00-00-000Z_{session}.jsonl", session_id=session,
                  cwd=cwd).append(Typed(f"p{i}"), Reply("ok"))
        OpenCodeTranscript(opencode / "opencode.db", directory=cwd).append(
            Typed(f"o{i}"), Reply("ok"))
    if not sessions:  # one worker
        thread = str(uuid.uuid4())
        CodexRollout(codex / f"rollout-2026-12-02T01-00-00-{thread}.jsonl", thread_id=thread,
                     cwd=cwd).append(Typed("x"), Reply("ok"))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SSA_", "CLAUDE_", "CODEX_", "XDG_", "PI_", "OPENCODE_"))}
    env["HOME"] = str(root)
    # The session must be a manager (ssa manage): a worker's hook stops after one peek.
    state = root / ".local" / "state" / "ssa"
    state.mkdir(parents=True, exist_ok=True)
    run_manage(state / "state.sqlite", f"agent:main:claude:{manager.session_id}", off=False,
               wake=True, out=io.StringIO(), err=io.StringIO())
    stdin = json.dumps({"session_id": manager.session_id, "cwd": cwd,
                        "hook_event_name": "UserPromptSubmit",
                        "transcript_path": str(manager.path), "prompt": "p"}).encode()
    return env, stdin


def _timed(argv: list[str], env: dict[str, str] | None = None,
           stdin: bytes = b"") -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=True,
                          timeout=60)
    return time.perf_counter() - start, done.stdout


def _interleaved(hook: list[str], runs: int, env: dict[str, str],
                 stdin: bytes) -> tuple[float, float, bytes]:
    """p50 of the baseline and of the hook, run in turn (the machine's load drifts)."""
    base: list[float] = []
    ours: list[float] = []
    out = b""
    for _ in range(runs):
        base.append(_timed([sys.executable, "-c", "import apsw"])[0])
        took, printed = _timed(hook, env, stdin)
        ours.append(took)
        out += printed
    return statistics.median(base), statistics.median(ours), out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print each figure next to its baseline. Returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--check", action="store_true", help="exit 3 if a goal is missed")
    args = parser.parse_args(argv)
    missed = False
    with tempfile.TemporaryDirectory(prefix="ssa-bench-hook-") as tmp:
        for label, sessions, goal in (("1 worker", 0, GOAL_SMALL),
                                      (f"{args.sessions} sessions", args.sessions, GOAL_LARGE)):
            root = Path(tmp) / label.replace(" ", "-")
            built = time.perf_counter()
            env, stdin = _home(root, sessions)
            built = time.perf_counter() - built
            hook = [*_ssa(), "hook", "claude-code"]
            first = time.perf_counter()
            # A run adopts at most MAX_ADOPT_PER_RUN new sessions: warm up until all are.
            for _ in range(sessions // MAX_ADOPT_PER_RUN + 2):
                subprocess.run(hook, input=stdin, env=env, check=True, capture_output=True,
                               timeout=300)
            first = time.perf_counter() - first
            baseline, ours, out = _interleaved(hook, args.runs, env, stdin)
            ratio = ours / baseline
            ok = ratio <= goal and out == b""
            missed |= not ok
            print(f"[hook] {label}: ssa hook p50 {ours * 1000:.1f} ms vs import apsw p50 "
                  f"{baseline * 1000:.1f} ms (interleaved): {ratio:.2f}x (goal {goal:g}x) "
                  f"{'ok' if ok else 'MISSED'}; warm-up runs (adopting) {first:.2f} s; "
                  f"home built in {built:.1f} s; printed {len(out)} bytes")
            shutil.rmtree(root, ignore_errors=True)
    return GOAL_MISSED if missed and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
