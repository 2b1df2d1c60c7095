"""A 40 MiB JSONL line: peak memory and time to classify it, ours next to baselines.

For Claude Code, Codex and Pi, a transcript holds a typed prompt of
``--mib`` MiB (a pasted log: escaped newlines, tabs, non-ASCII, a few
``\\uXXXX`` escapes) between ordinary rows. Each measurement runs in a fresh
interpreter (its peak RSS is its own, read with ``os.wait4``):

* ``monitor``: a gateway adopts the transcript from its start and runs
  ``scan_upstream()`` (the monitor's path: cap-sized pieces, reduced copy);
* ``classify``: ``ssa classify``'s code path over the file;
* ``full`` (baseline): the whole line read into memory and given to the
  classifier, as a monitor without a cap would do;
* ``ijson`` (the alternative the issue names, if ``ijson`` is installed):
  the line streamed through ijson's C backend into a reduced object, strings
  cut to the same head and tail, then the classifier's mapping path.

Each row prints the decision, the peak RSS of the process and its growth
over the same process just before the measured step, the time, and the
ratios to the baselines. Run: ``python scripts/bench_longline.py [--mib 40]``;
``--check`` exits 3 (``scripts.bench.GOAL_MISSED``, as the other benchmarks) if a goal
is missed (peak RSS < 400 MiB, decisions right).
``--child`` is the measured process's entry point (used by
``tests/test_longline_memory.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_PEAK_MIB = 400.0
SOURCES = ("claude", "codex", "pi")
_PLACEHOLDER = "\u2063PLACEHOLDER\u2063"
_LOG_LINE = ("2026-12-01T16:44:55.123Z INFO worker[1234]: request id=%08d path=/api/v1/items "
             "status=200 \t latency=12.5ms user=\u00e9l\u00e8ve caf\u00e9 \u2603 "
             "note=\"quoted\" back\\slash\n")
_BLOCK_LINES = 24


def _rows(source: str) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """``(rows before, the big row split at its text, rows after)`` for ``source``."""
    def dumps(row: dict[str, Any]) -> bytes:
        return json.dumps(row).encode() + b"\n"

    if source == "claude":
        def user(text: str) -> dict[str, Any]:
            return {"parentUuid": None, "isSidechain": False, "userType": "external",
                    "cwd": "/work", "sessionId": "ce24e94d-ea12-40cb-9b87-ceb55770af78",
                    "version": "2.1.37", "gitBranch": "main", "type": "user",
                    "message": {"role": "user", "content": text},
                    "uuid": "6f1c0f6e-8f1b-4a59-9d3e-3b1f0e3c9a11",
                    "timestamp": "2026-07-13T10:05:00.000Z"}
        before = [dumps(user("first prompt"))]
        big = [dumps(user(_PLACEHOLDER))]
        after = [dumps(user("after the paste"))]
    elif source == "codex":
        meta = {"timestamp": "2025-11-01T01:03:39.000Z", "type": "session_meta",
                "payload": {"id": "01a06421-3bf7-7ed2-a618-e42b6c961905",
                            "timestamp": "2025-11-01T01:03:39.000Z", "cwd": "/work",
                            "originator": "codex_cli_rs", "cli_version": "0.57.0",
                            "source": "cli"}}

        def legacy(text: str) -> list[dict[str, Any]]:
            return [{"timestamp": "2025-11-01T01:03:39.989Z", "type": "response_item",
                     "payload": {"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": text}]}},
                    {"timestamp": "2025-11-01T01:03:39.990Z", "type": "event_msg",
                     "payload": {"type": "user_message", "message": text, "kind": "plain"}}]
        before = [dumps(meta)] + [dumps(r) for r in legacy("first prompt")]
        big = [dumps(r) for r in legacy(_PLACEHOLDER)]
        after = [dumps(r) for r in legacy("after the paste")]
    else:
        header = {"type": "session", "version": 3, "id": "019e963d-6bd6-7ade-8a49-256ac3391bdd",
                  "timestamp": "2026-06-05T05:24:28.246Z", "cwd": "/work"}

        def message(text: str) -> dict[str, Any]:
            return {"type": "message", "id": "a1b2c3d4", "parentId": None,
                    "timestamp": "2026-06-05T05:24:28.254Z",
                    "message": {"role": "user", "content": [{"type": "text", "text": text}],
                                "timestamp": 1780637068253}}
        before = [dumps(header), dumps(message("first prompt"))]
        big = [dumps(message(_PLACEHOLDER))]
        after = [dumps(message("after the paste"))]
    return before, big, after


def write_transcript(source: str, path: Path, mib: int) -> int:
    """Write the transcript, the big text in pieces (the writer never holds it whole).

    Returns the number of typed turns the classifier must count (3: before,
    the paste, after).
    """
    before, big, after = _rows(source)
    marker = json.dumps(_PLACEHOLDER)[1:-1].encode()
    block_bytes = len(json.dumps(_LOG_LINE % 0)[1:-1].encode()) * _BLOCK_LINES
    blocks = -(-(mib << 20) // block_bytes)  # the big line is at least mib MiB
    with path.open("wb") as handle:
        for row in before:
            handle.write(row)
        for row in big:
            head, tail = row.split(marker)
            handle.write(head)
            for n in range(blocks):
                text = "".join(_LOG_LINE % (n * _BLOCK_LINES + i) for i in range(_BLOCK_LINES))
                handle.write(json.dumps(text)[1:-1].encode())
            handle.write(tail)
        for row in after:
            handle.write(row)
    return 3


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, source: str, path: str) -> dict[str, Any]:
    """The measured process: decide the transcript's lines with ``mode``; say how it went."""
    from actors import Gateway, GatewayConfig
    from actors.upstream.classify import classify_units
    from actors.upstream.scan import line_classifier

    cap = GatewayConfig().scan_cap_bytes
    classify = line_classifier(source)
    result: dict[str, Any] = {"mode": mode, "source": source}
    if mode == "monitor":
        with tempfile.TemporaryDirectory() as tmp:
            gw = Gateway.open(Path(tmp) / "state.sqlite", monitor=False)
            try:
                key = f"agent:main:adopted:{source}"
                gw.adopt(key, source=source, path=path, from_start=True)
                gw.watch("agent:main:main", key)
                base = _rss_mib()
                started = time.perf_counter()
                events = gw.scan_upstream()
                result["seconds"] = time.perf_counter() - started
                result["turns"] = sum((e.payload or {}).get("turns", 1) for e in events
                                      if e.kind == "human_direct_message")
            finally:
                gw.close()
    elif mode == "classify":
        base = _rss_mib()
        started = time.perf_counter()
        rows = list(classify_units(source, path, scan_cap_bytes=cap))
        result["seconds"] = time.perf_counter() - started
        result["turns"] = sum(1 for row in rows if row["human"])
        result["rows"] = len(rows)
    elif mode == "full":
        base = _rss_mib()
        started = time.perf_counter()
        with open(path, "rb") as handle:
            result["turns"] = sum(1 for line in handle if line.strip()
                                  and classify(line.rstrip(b"\n")).human)
        result["seconds"] = time.perf_counter() - started
    elif mode == "ijson":
        base = _rss_mib()
        started = time.perf_counter()
        result["turns"] = _ijson_turns(source, path, cap)
        result["seconds"] = time.perf_counter() - started
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    result["base_mib"] = base
    result["peak_mib"] = _rss_mib()
    return result


def _ijson_turns(source: str, path: str, cap: int) -> int:
    """The alternative: ijson (C backend) builds a reduced object per long line."""
    import ijson  # type: ignore[import-untyped, import-not-found, unused-ignore]

    from actors.upstream.longline import KEEP_CHARS
    from actors.upstream.scan import line_classifier

    classify = line_classifier(source)
    turns = 0
    with open(path, "rb") as handle:
        for line in iter(lambda: handle.readline(cap + 1), b""):
            if len(line) <= cap:
                if line.strip():
                    turns += classify(line.rstrip(b"\n")).human
                continue
            # A long line: stream it from the file through ijson until its newline.
            start = handle.tell() - len(line)
            handle.seek(start)
            builder = ijson.ObjectBuilder()
            events = ijson.basic_parse(_LineReader(handle), use_float=True)
            for event, value in events:
                kept = value
                if event == "string" and len(value) > 2 * KEEP_CHARS:
                    kept = value[:KEEP_CHARS] + "\u2026" + value[-KEEP_CHARS:]
                builder.event(event, kept)
            turns += classify(json.dumps(builder.value).encode()).human
    return turns


class _LineReader:
    """A file object view that ends at the next newline (ijson reads it in chunks)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self._done = False

    def read(self, size: int = 65536) -> bytes:
        if self._done:
            return b""
        data: bytes = self._handle.readline(size)
        if data.endswith(b"\n"):
            self._done = True
        return data


def measure(mode: str, source: str, path: Path, *, timeout: float = 120.0) -> dict[str, Any]:
    """Run ``child`` in a fresh interpreter; its own peak RSS comes from ``os.wait4``.

    Blocks for at most ``timeout`` seconds; a child still running then is
    killed and :class:`TimeoutError` raised. Raises :class:`RuntimeError` if
    the child fails.
    """
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", mode,
                             source, str(path)], stdout=subprocess.PIPE, cwd=str(ROOT))
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    out = b""
    timed_out = False
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                proc.kill()
                break
            if not selector.select(left):
                continue
            part = os.read(proc.stdout.fileno(), 65536)
            if not part:
                break
            out += part
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    if timed_out:
        raise TimeoutError(f"{mode} {source} took longer than {timeout} s")
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} {source} failed with exit code {proc.returncode}")
    result: dict[str, Any] = json.loads(out)
    result["peak_mib"] = max(result["peak_mib"], usage.ru_maxrss / 1024)
    return result


def main() -> int:
    """Print the table (``--child``: run one measurement and print its JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=40)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "SOURCE", "PATH"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    try:
        import ijson  # type: ignore[import-untyped, import-not-found, unused-ignore]  # noqa: F401
        modes: tuple[str, ...] = ("monitor", "classify", "full", "ijson")
    except ImportError:
        modes = ("monitor", "classify", "full")
        print("ijson is not installed: its row is left out (pip install ijson)")
    ok = True
    print(f"{'source':7} {'mode':9} {'turns':>5} {'peak MiB':>9} {'growth':>8} "
          f"{'seconds':>8} {'peak vs full':>13} {'time vs full':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        for source in SOURCES:
            path = Path(tmp) / f"{source}.jsonl"
            want = write_transcript(source, path, args.mib)
            results = {mode: measure(mode, source, path) for mode in modes}
            full = results["full"]
            for mode, r in results.items():
                growth = r["peak_mib"] - r["base_mib"]
                print(f"{source:7} {mode:9} {r['turns']:>5} {r['peak_mib']:>9.1f} "
                      f"{growth:>8.1f} {r['seconds']:>8.2f} "
                      f"{r['peak_mib'] / full['peak_mib']:>12.2f}x "
                      f"{r['seconds'] / full['seconds']:>12.2f}x")
                if mode in ("monitor", "classify"):
                    ok = ok and r["turns"] == want and r["peak_mib"] < GOAL_PEAK_MIB
            path.unlink()
    print(f"goal: {args.mib} MiB line classified (3 turns) with peak RSS < {GOAL_PEAK_MIB:.0f} "
          f"MiB: {'met' if ok else 'MISSED'}")
    return 0 if ok or not args.check else 3  # scripts.bench.GOAL_MISSED


if __name__ == "__main__":
    raise SystemExit(main())
