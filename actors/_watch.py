"""``ssa watch``: adopt every session found in the catalogs and report direct human turns."""

from __future__ import annotations

import re
import signal
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import msgspec

from actors.gateway import Gateway
from actors.upstream.catalog import Candidate, default_catalogs, discover
from persistence.keys import agent_id_of, key_problem

__all__ = ["NOTICE_PATTERN", "run_watch"]

NOTICE_PATTERN = re.compile(r'sessionKey "(?P<key>[^"]+)" changesSince (?P<since>\d+)\.$')
"""Finds the target and base version in a notice line."""

SOURCES = ("claude", "codex", "opencode", "pi")


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop`` (main thread only); previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _catalogs(args: Any) -> tuple[list[tuple[str, Path]], list[str]]:
    given = [(source, Path(p)) for source in SOURCES for p in (getattr(args, source) or [])]
    if given:
        return given, []
    defaults = default_catalogs()
    found = [(s, p) for s in SOURCES for p in defaults[s] if p.exists()]
    looked = [f"{s}: {p}" for s in SOURCES for p in defaults[s]]
    return found, looked


def _adopt_all(gw: Gateway, candidates: list[Candidate], watcher: str, agent: str,
               err: TextIO) -> tuple[Counter[str], Counter[str]]:
    adopted: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    progress = err.isatty()
    for index, candidate in enumerate(candidates, 1):
        key = f"agent:{agent}:{candidate.source}:{candidate.thread_id}"
        if key_problem(key) is not None:
            skipped["unusable session id"] += 1
            continue
        link = gw.adopt(key, source=candidate.source, path=candidate.path,
                        thread_id=candidate.thread_id)
        if link is not None:
            gw.watch(watcher, key)
            adopted[candidate.source] += 1
        elif gw.session_status(key).state_version:
            skipped[{"pi": "legacy Pi format", "codex": "Codex thread not started by a user",
                     "opencode": "OpenCode child session"}.get(candidate.source,
                                                               "not monitorable")] += 1
        else:
            skipped["unreadable"] += 1
        if progress:
            err.write(f"\radopting {index}/{len(candidates)}")
            err.flush()
    if progress and candidates:
        err.write("\n")
    return adopted, skipped


def _report(gw: Gateway, watcher: str, as_json: bool, out: TextIO) -> int:
    notices = gw.drain(watcher)
    for text in notices:
        match = NOTICE_PATTERN.search(text)
        if match is None:
            continue
        key, since = match["key"], int(match["since"])
        status = gw.session_status(key, changes_since=since)
        events = status.state_changes.events if status.state_changes else ()
        if as_json:
            out.write(msgspec.json.encode({
                "notice": text, "sessionKey": key, "changesSince": since,
                "stateVersion": status.state_version, "events": events}).decode() + "\n")
            continue
        out.write(f"notice: {text}\n")
        for event in events:
            turns = f" ({event.payload['turns']} turns)" if event.payload and \
                "turns" in event.payload else ""
            out.write(f"  #{event.sequence} {event.kind} by {event.actor_type}: "
                      f"{event.summary}{turns}\n")
    out.flush()
    return len(notices)


def run_watch(args: Any, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run ``ssa watch`` with parsed ``args``; returns the exit code (0).

    Blocks the calling thread until ``--scans`` scans are done or SIGINT/
    SIGTERM arrives (handled only when called from the main thread); the
    gateway is closed cleanly either way.
    """
    catalogs, looked = _catalogs(args)
    if not catalogs:
        out.write("ssa watch: no session catalogs found. Looked in:\n")
        for place in looked:
            out.write(f"  {place}\n")
        out.write("Point it elsewhere with --claude DIR, --codex DIR, --opencode DB or --pi DIR.\n")
        return 0
    watcher = args.watcher
    agent = agent_id_of(watcher)
    stop = threading.Event()
    with _stop_on_signals(stop), Gateway.open(args.db, monitor=False) as gw:
        candidates = [c for source, root in catalogs for c in discover(source, root)]
        adopted, skipped = _adopt_all(gw, candidates, watcher, agent, err)
        summary = ", ".join(f"{s} {n}" for s, n in sorted(adopted.items())) or "none"
        line = f"adopted {sum(adopted.values())} sessions ({summary})"
        if skipped:
            line += "; skipped " + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))
        out.write(line + f"; watching as {watcher}, scanning every {args.interval:g}s\n")
        out.flush()
        scans = 0
        while args.scans is None or scans < args.scans:
            if stop.wait(args.interval):
                break
            gw.scan_upstream()
            scans += 1
            _report(gw, watcher, args.json, out)
    return 0
