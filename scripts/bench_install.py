"""Time and memory of ``ssa install claude-code`` against the size of ``~/.claude.json``.

Usage: ``python -m scripts.bench_install [--sizes 1,8,29] [--race N]`` (megabytes). For each size a
child process builds a ``~/.claude.json`` shaped like a heavy user's (``projects`` with
many entries, each with a history), then runs the install (the MCP entry in that
file, backup and fsync included, and the hooks in ``settings.json``) and reports wall
time and the peak resident memory above the child's start. Prints one line per size;
writes only under a temporary directory. Blocks; the caller's thread.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["build_state", "main", "measure", "race", "write_like_claude"]


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


def write_like_claude(path: Path, count: int) -> None:
    """Rewrite ``path`` ``count`` times the way Claude Code does (read, add a key, write a
    temporary file, rename it over), taking no lock of ssa's."""
    for i in range(count):
        value = json.loads(path.read_text())
        value[f"write-{i}"] = i
        temp = path.with_name(f".claude.json.writer-{i}")
        temp.write_text(json.dumps(value, indent=2))
        os.replace(temp, path)


def race(megabytes: float, writes: int) -> tuple[int, int, int]:
    """Install and uninstall ssa's MCP entry in a loop while a child rewrites the file
    ``writes`` times; returns ``(writes lost, installs run, installs refused because the
    file kept changing)``."""
    from actors.agents.installplan import ConfigRefused, apply, plan
    from actors.agents.installsetup import Setup

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ".claude.json"
        build_state(path, megabytes)
        setup = Setup(ssa="/v/bin/ssa", db=None, project=None, home=Path(tmp), env={})
        writer = subprocess.Popen([sys.executable, "-m", "scripts.bench_install", "--writer",
                                   str(path), str(writes)])
        runs = refused = 0
        try:
            while writer.poll() is None:
                try:
                    apply(plan("claude-code", setup, install=runs % 2 == 0))
                except ConfigRefused:
                    refused += 1
                runs += 1
        finally:
            writer.wait(timeout=600)
        value = json.loads(path.read_text())
        return sum(f"write-{i}" not in value for i in range(writes)), runs, refused


def main(argv: list[str] | None = None) -> int:
    """Measure each size in a fresh child; prints ``size MB, seconds, peak MB``; with
    ``--race N``, the writes lost to N concurrent rewrites."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1,8,29", help="comma-separated sizes in MB")
    parser.add_argument("--race", type=int, metavar="N",
                        help="count the rewrites lost of N made while installs run")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--writer", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        elapsed, peak = measure(Path(args.child))
        sys.stdout.write(f"{elapsed:.3f} {peak:.1f}\n")
        return 0
    if args.writer:
        write_like_claude(Path(args.writer[0]), int(args.writer[1]))
        return 0
    if args.race:
        for size in (float(s) for s in args.sizes.split(",")):
            lost, runs, refused = race(size, args.race)
            sys.stdout.write(f"{size:6.1f} MB: {lost} of {args.race} rewrites lost "
                             f"({runs} installs/uninstalls ran meanwhile, {refused} of them "
                             "refused: the file kept changing)\n")
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
