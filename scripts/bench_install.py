"""Time and memory of ``ssa install claude-code`` against the size of ``~/.claude.json``.

Usage: ``python -m scripts.bench_install [--sizes 1,8,29]`` (megabytes). For each size a
child process builds a ``~/.claude.json`` shaped like a heavy user's (``projects`` with
many entries, each with a history), then runs the install (the MCP entry in that
file, backup and fsync included, and the hooks in ``settings.json``) and reports wall
time and the peak resident memory above the child's start. Prints one line per size;
writes only under a temporary directory. Blocks; the caller's thread.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["build_state", "main", "measure"]


def build_state(path: Path, megabytes: float) -> int:
    """Write a ``.claude.json``-like file of about ``megabytes`` MB; returns its size in bytes."""
    projects: dict[str, object] = {}
    entry = {"allowedTools": [], "history": [{"display": "fix the failing test " * 8,
                                              "pastedContents": {}}] * 20,
             "mcpContextUris": [], "mcpServers": {}, "enabledMcpjsonServers": [],
             "hasTrustDialogAccepted": True, "lastCost": 0.1234, "lastDuration": 123456}
    unit = len(json.dumps(entry, indent=2))
    for i in range(max(1, int(megabytes * 1_000_000 / unit))):
        projects[f"/home/u/work/project-{i:06d}"] = entry
    state = {"numStartups": 321, "userID": "f" * 64, "oauthAccount": {"token": "secret"},
             "projects": projects}
    path.write_text(json.dumps(state, indent=2))
    return path.stat().st_size


def measure(path: Path) -> tuple[float, float]:
    """Run the install's edit of ``path`` in this process: ``(seconds, peak MB added)``."""
    from actors.agents.installplan import apply, plan
    from actors.agents.installsetup import Setup

    setup = Setup(ssa="/v/bin/ssa", db=None, project=None, home=path.parent, env={})
    base = _status_kb("VmRSS")
    start = time.perf_counter()
    apply(plan("claude-code", setup, install=True))
    elapsed = time.perf_counter() - start
    return elapsed, (_status_kb("VmHWM") - base) / 1024


def _status_kb(field: str) -> int:
    """A ``/proc/self/status`` memory figure in kB (``VmHWM`` is reset by exec, unlike
    ``ru_maxrss``, which a child inherits from the parent that built the file)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def main(argv: list[str] | None = None) -> int:
    """Measure each size in a fresh child; prints ``size MB, seconds, peak MB``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1,8,29", help="comma-separated sizes in MB")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        elapsed, peak = measure(Path(args.child))
        sys.stdout.write(f"{elapsed:.3f} {peak:.1f}\n")
        return 0
    for size in (float(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / ".claude.json"
            nbytes = build_state(path, size)
            done = subprocess.run([sys.executable, "-m", "scripts.bench_install", "--child",
                                   str(path)], capture_output=True, text=True, check=True,
                                  timeout=600)
            seconds, peak = (float(word) for word in done.stdout.split())
            sys.stdout.write(f"{nbytes / 1e6:6.1f} MB: {seconds:7.3f} s, "
                             f"peak +{peak:7.1f} MB\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
