"""Push latency per tool with the real CLIs (issue 35), beside a same-run baseline.

For each manager tool (Claude Code, OpenCode, Pi, Codex), in the harness
(``tests/harness``: the pinned CLI in tmux, a throw-away HOME, a fake model
on 127.0.0.1): the manager makes itself the manager with its shell tool and
goes idle; then ``--runs`` times a typed turn is appended to a Codex worker's
rollout written by the test kit in the same project, and the time until the
manager's model request arrives is taken (no ``ssa watch``; the waiting hook
scans). Then ``--runs`` times ``ssa send`` into the idle manager's session,
timed to its model request.

The baseline, in the same run: the waiting hook alone (``bench_wake.py``'s
wake latency, no tool), so ``tool share = figure - baseline`` is what the
tool adds (Claude Code's turn start, Codex's 10 s queue tick).

Usage: ``python scripts/bench_push.py [--runs 5] [--tools claude,opencode,pi,qwen,codex]
[--with-watch]`` (``--with-watch``: each tool again while ``ssa watch`` runs).
Needs the pinned CLIs (``python -m tests.harness.install``) and tmux. Main
thread; a few minutes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from actors.testing import CodexRollout, Reply, Typed  # noqa: E402
from scripts import bench_wake  # noqa: E402
from tests.harness import Agent, Harness, Home, Text  # noqa: E402
from tests.harness.install import install  # noqa: E402

SSA = str(Path(sys.executable).with_name("ssa"))
TIMEOUT_S = 40.0
INSTALL = {"claude": ("claude-code", ()), "opencode": ("opencode", ()), "pi": ("pi", ()),
           "qwen": ("qwen", ()), "codex": ("codex", ("--dangerously-bypass-hook-trust",))}


def _setup(tool: str) -> Callable[[Home, Path], None]:
    def setup(home: Home, project: Path) -> None:
        del project
        env = {**home.env(), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "CODEX_HOME": str(home.root / ".codex")}
        subprocess.run([SSA, "install", tool], env=env, capture_output=True, timeout=60,
                       check=True)
    return setup


def _wait_request(agent: Agent, before: int) -> float:
    """Seconds until the manager's main request ``before + 1`` arrives (10 ms steps)."""
    started = time.monotonic()
    while len(agent.model.main_requests()) <= before:
        if time.monotonic() - started > TIMEOUT_S:
            raise TimeoutError(f"{agent.tool.name}: no request within {TIMEOUT_S} s")
        time.sleep(0.01)
    return time.monotonic() - started


def _manager_key(agent: Agent, tool: str) -> str:
    if tool == "opencode":
        sessions = {r.session for r in agent.decided_rows() if r.session is not None}
        return f"agent:main:opencode:{sessions.pop()}"
    (path,) = agent.transcripts()
    stem = path.stem
    if tool == "codex":
        return f"agent:main:codex:{stem[-36:]}"
    if tool == "pi":
        return f"agent:main:pi:{stem.rsplit('_', 1)[-1]}"
    return f"agent:main:{tool}:{stem}"


def measure(tool: str, runs: int, root: Path, *, with_watch: bool = False
            ) -> tuple[list[float], list[float]]:
    """(wake seconds, send seconds) for one manager tool (``with_watch``: while ``ssa
    watch`` runs in the home, scanning; the waiting hook then only reads)."""
    harness = Harness(root, install())
    watch: subprocess.Popen[bytes] | None = None
    try:
        home = harness.home()
        project = harness.project(git=True)
        name, args = INSTALL[tool]
        manager = harness.start(tool, name="manager", home=home, project=project,
                                setup=_setup(name), args=args)
        manager.script_shell(f"{SSA} manage", then="manager ready")
        manager.prompt("make yourself the manager")
        key = _manager_key(manager, tool)
        thread = str(uuid.uuid4())
        day = home.root / ".codex" / "sessions" / "2026" / "12" / "06"
        day.mkdir(parents=True, exist_ok=True)
        worker = CodexRollout(day / f"rollout-2026-12-06T03-00-00-{thread}.jsonl",
                              thread_id=thread, cwd=str(project))
        worker.append(Typed("an earlier prompt"), Reply("ok"))
        env = {**home.env(), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "CODEX_HOME": str(home.root / ".codex")}
        if with_watch:
            watch = subprocess.Popen([SSA, "watch", "--interval", "1"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        time.sleep(2.0)  # the manager's waiting hook links the worker at its end
        wakes, sends = [], []
        for i in range(runs):
            manager.script(Text(f"noted {i}"))
            before = len(manager.model.main_requests())
            worker.append(Typed(f"typed {i}"), Reply("ok"))
            wakes.append(_wait_request(manager, before))
            manager.wait_turn(timeout_s=TIMEOUT_S)
            time.sleep(1.0)  # the next waiting hook is in place
        for i in range(runs):
            manager.script(Text(f"got it {i}"))
            before = len(manager.model.main_requests())
            started = time.monotonic()
            subprocess.run([SSA, "send", key, f"message {i}", "--from",
                            "agent:main:claude:bench-sender"], env=env, capture_output=True,
                           timeout=60, check=True)
            _wait_request(manager, before)  # returns at once if it arrived already
            sends.append(time.monotonic() - started)
            manager.wait_turn(timeout_s=TIMEOUT_S)
            time.sleep(1.0)
        return wakes, sends
    finally:
        if watch is not None:
            watch.terminate()
            try:
                watch.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                watch.kill()
                watch.wait(timeout=TIMEOUT_S)
        harness.close()


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    """Run the benchmark; prints one line per tool and the baseline. Returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tools", default="claude,opencode,pi,qwen,codex")
    parser.add_argument("--with-watch", action="store_true",
                        help="also measure while ssa watch runs in the home")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base_home = bench_wake.Home(Path(tmp) / "baseline")
        baseline = bench_wake.wake_latency(base_home, max(5, args.runs))
        base = statistics.median(baseline)
        sys.stdout.write(f"baseline (waiting hook alone) p50: {base:.3f} s\n")
        for tool in args.tools.split(","):
            for watched in (False, True) if args.with_watch else (False,):
                wakes, sends = measure(tool, args.runs, Path(tmp) / f"{tool}-{watched}",
                                       with_watch=watched)
                label = f"{tool} (with ssa watch)" if watched else tool
                sys.stdout.write(
                    f"{label}: wake p50 {statistics.median(wakes):.3f} s"
                    f" p95 {_p(wakes, 0.95):.3f} s"
                    f" (tool share p50 {statistics.median(wakes) - base:.3f} s);"
                    f" send p50 {statistics.median(sends):.3f} s"
                    f" p95 {_p(sends, 0.95):.3f} s\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
