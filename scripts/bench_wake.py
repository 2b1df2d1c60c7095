"""Wake latency and idle cost of ``ssa hook <tool> --wait`` (issue 35), with a same-run baseline.

Figures (a throw-away home: a manager Claude Code session made a manager, a
Codex worker of the same project, both written by the test kit; no
``ssa watch`` runs, so the waiting hook scans the worker itself):

* **wake latency**: a typed turn appended to the worker's transcript -> the
  waiting hook exits with the push path's code (2) having printed the
  notice; p50 and p95 over ``--runs`` runs; again while ``ssa watch`` runs
  in the home (it scans; the waiting hook only reads). The real tool adds its own start
  of the woken turn (Claude Code: about 0.15 s, measured in docs/push.md).
* **baseline**: one prompt hook with nothing pending (``ssa hook claude-code``,
  the cold path), timed in the same run: the ratio says how many cold hook
  starts a wake costs, whatever the machine's speed.
* **idle cost**: CPU time (``/proc/<pid>/stat`` utime + stime) and RSS
  (``VmRSS``) of one and of ten waiting hooks over ``--idle`` seconds in which
  nothing changes, as a share of one core.

Usage: ``python scripts/bench_wake.py [--runs 20] [--idle 10]``. Prints one
line per figure; ``--json`` prints them as one JSON object. Linux only
(``/proc``, inotify). Main thread; runs for about ``runs`` + 2 x ``idle``
seconds.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from actors.agents.manage import run_manage  # noqa: E402
from actors.testing import ClaudeCodeTranscript, CodexRollout, Reply, Typed  # noqa: E402

TIMEOUT_S = 30.0


class Home:
    """A manager and a worker of one project in a throw-away home."""

    def __init__(self, root: Path) -> None:
        self.root = root
        project = root / "proj"
        (project / ".git").mkdir(parents=True)
        (root / "state").mkdir()
        claude = root / ".claude" / "projects" / str(project).replace("/", "-")
        claude.mkdir(parents=True)
        self.manager = ClaudeCodeTranscript(claude / f"{uuid.uuid4()}.jsonl", cwd=str(project))
        self.manager.append(Typed("plan"), Reply("ok"))
        thread = str(uuid.uuid4())
        codex = root / ".codex" / "sessions" / "2026" / "12" / "06"
        codex.mkdir(parents=True)
        self.worker = CodexRollout(codex / f"rollout-2026-12-06T01-00-00-{thread}.jsonl",
                                   thread_id=thread, cwd=str(project))
        self.worker.append(Typed("earlier"), Reply("ok"))
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("SSA_", "CLAUDE_", "CODEX_", "XDG_"))}
        self.env.update({"HOME": str(root), "SSA_STATE_DIR": str(root / "state"),
                         "PYTHONPATH": str(ROOT)})
        self.input = root / "input.json"
        self.input.write_text(json.dumps({
            "session_id": self.manager.session_id, "cwd": str(project),
            "hook_event_name": "Stop", "transcript_path": str(self.manager.path)}))
        run_manage(root / "state" / "state.sqlite",
                   f"agent:main:claude:{self.manager.session_id}", off=False, wake=True,
                   out=io.StringIO())

    def hook(self, *extra: str) -> subprocess.Popen[bytes]:
        with self.input.open("rb") as stdin:
            return subprocess.Popen([sys.executable, "-m", "actors", "hook", "claude-code",
                                     *extra], stdin=stdin, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, env=self.env)


def _ready(process: subprocess.Popen[bytes], seconds: float = 5.0) -> None:
    """Wait until the waiting hook blocks (its CPU time stops growing)."""
    deadline = time.monotonic() + seconds
    last = -1
    while time.monotonic() < deadline:
        now = _cpu_ticks(process.pid)
        if now == last:
            return
        last = now
        time.sleep(0.2)


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def wake_latency(home: Home, runs: int) -> list[float]:
    """Seconds from a typed turn appended to the waiting hook's exit with code 2."""
    took = []
    for i in range(runs):
        waiting = home.hook("--wait")
        _ready(waiting)
        started = time.monotonic()
        home.worker.append(Typed(f"typed {i}"), Reply("ok"))
        code = waiting.wait(timeout=TIMEOUT_S)
        took.append(time.monotonic() - started)
        assert waiting.stderr is not None
        err = waiting.stderr.read().decode()
        waiting.stderr.close()
        if code != 2 or "changed (other actor)" not in err:
            raise RuntimeError(f"run {i}: exit {code}: {err[-500:]}")
    return took


def with_watch(home: Home, runs: int) -> list[float]:
    """Wake latency while ``ssa watch`` runs in the home: it scans, the waiting hook reads."""
    watch = subprocess.Popen([sys.executable, "-m", "actors", "watch", "--interval", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=home.env, start_new_session=True)
    try:
        time.sleep(3.0)  # it adopted the home's sessions
        return wake_latency(home, runs)
    finally:
        watch.terminate()
        try:
            watch.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            watch.kill()
            watch.wait(timeout=TIMEOUT_S)


def baseline(home: Home, runs: int) -> list[float]:
    """Seconds of one prompt hook with nothing pending (the cold path)."""
    took = []
    for _ in range(runs):
        started = time.monotonic()
        process = home.hook()
        process.wait(timeout=TIMEOUT_S)
        took.append(time.monotonic() - started)
        assert process.stderr is not None
        process.stderr.close()
    return took


def idle_cost(homes: list[Home], seconds: float) -> tuple[float, float]:
    """(share of one core used by all the waiting hooks together, the largest RSS in MiB)."""
    waiting = [home.hook("--wait") for home in homes]
    try:
        for process in waiting:
            _ready(process)
        before = sum(_cpu_ticks(p.pid) for p in waiting)
        time.sleep(seconds)
        after = sum(_cpu_ticks(p.pid) for p in waiting)
        rss = max(_rss_mib(p.pid) for p in waiting)
    finally:
        for process in waiting:
            process.kill()
            process.wait(timeout=TIMEOUT_S)
            if process.stderr is not None:
                process.stderr.close()
    ticks = os.sysconf("SC_CLK_TCK")
    return (after - before) / ticks / seconds, rss


def main() -> int:
    """Run the benchmark; prints the figures. Returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--idle", type=float, default=10.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "one")
        base = baseline(home, max(5, args.runs // 2))
        wake = wake_latency(home, args.runs)
        watched = sorted(with_watch(Home(Path(tmp) / "watched"), args.runs))
        one_cpu, one_rss = idle_cost([home], args.idle)
        ten = [Home(Path(tmp) / f"h{i}") for i in range(10)]
        ten_cpu, ten_rss = idle_cost(ten, args.idle)
    wake.sort()
    figures = {
        "wake_p50_s": statistics.median(wake),
        "wake_p95_s": wake[min(len(wake) - 1, int(0.95 * len(wake)))],
        "wake_with_ssa_watch_p50_s": statistics.median(watched),
        "wake_with_ssa_watch_p95_s": watched[min(len(watched) - 1, int(0.95 * len(watched)))],
        "baseline_cold_hook_p50_s": statistics.median(base),
        "wake_p50_over_cold_hook": statistics.median(wake) / statistics.median(base),
        "idle_one_core_share": one_cpu,
        "idle_one_rss_mib": one_rss,
        "idle_ten_core_share": ten_cpu,
        "idle_ten_max_rss_mib": ten_rss,
    }
    if args.json:
        sys.stdout.write(json.dumps(figures) + "\n")
    else:
        for name, value in figures.items():
            sys.stdout.write(f"{name}: {value:.4f}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
