"""``ssa watch``: adopt every session found in the catalogs and report direct human turns."""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import msgspec

from actors.cli.adopter import Adopter, announce
from actors.cli.defaults import DEFAULT_WATCHER
from actors.cli.execpool import DEFAULT_JOBS, DEFAULT_TIMEOUT_S, ExecPool, command_argv
from actors.cli.wakeup import StopFlag, Wakeup
from actors.facade.gateway import Gateway, upstream_service
from actors.facade.values import SessionStateEvent
from actors.monitors.catalogfeed import CatalogFeed
from actors.monitors.naming import where_name
from actors.monitors.where import UpstreamWhere, describe, in_store, where_of
from actors.upstream.catalog import Candidate, default_catalogs, discover, unreadable_store
from actors.upstream.source import Source
from actors.upstream.sources import all_sources, find_source
from persistence import peek
from persistence.keys import agent_id_of

__all__ = ["NOTICE_PATTERN", "NoticeRecord", "run_watch"]

logger = logging.getLogger(__name__)

NOTICE_PATTERN = re.compile(r'sessionKey "(?P<key>[^"]+)" changesSince (?P<since>\d+)\.$')
"""Finds the target and base version in a notice line."""

EXEC_SHUTDOWN_GRACE_S = 5.0
"""Seconds ``--exec`` runs still have when the watch stops; the rest are killed."""


class NoticeRecord(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One drained notice reconciled: a ``--json`` line and an ``--exec`` run's stdin.

    Attributes:
        notice: the notice line, as drained.
        session_key: the session it is about.
        changes_since: the version it asks to reconcile from.
        state_version: the session's head when it was reconciled.
        events: ``session_status(key, changes_since=...)``'s events, in the
            contract's JSON shape.
        history_gap, truncated, earliest_available_sequence: the rest of
            that answer's ``stateChanges``.
        upstream: which adopted session it is (tool, transcript, project
            directory), when the session has an upstream link.
        name: the session's name in its tool (its title, else the first
            words typed), read from the tool's files when the notice is
            printed and never stored; ``None`` when it has none.
    """

    notice: str
    session_key: str
    changes_since: int
    state_version: int
    events: tuple[SessionStateEvent, ...]
    history_gap: bool
    truncated: bool
    earliest_available_sequence: int
    upstream: UpstreamWhere | None = None
    name: str | None = None


Handoff = Callable[[NoticeRecord], None]
"""Takes each reconciled notice after it is printed (``--exec``); must not block."""


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, name))
"""The signals that stop ``ssa watch`` cleanly (SIGHUP: its terminal closed)."""


@contextmanager
def _stop_on_signals(stop: StopFlag, wake: Wakeup) -> Iterator[None]:
    """SIGINT/SIGTERM/SIGHUP set ``stop`` and ``wake`` (main thread only).

    The handler takes no lock at all: the next signal may interrupt it and run
    it again inside itself, and the main thread may be inside the wake-up's
    ``wait``. ``stop`` is a :class:`~actors.cli.wakeup.StopFlag` and ``wake`` a
    :class:`~actors.cli.wakeup.Wakeup`, both safe there (a ``threading.Event``
    deadlocks on its own lock).

    When none arrived, the old handlers come back after. Once one arrived the
    process is on its way out: further stop signals are ignored from then on,
    so a second Ctrl-C during the cleanup, or while the interpreter exits,
    neither breaks it off nor kills the process by the signal.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = StopFlag()

    def handler(signum: int, frame: FrameType | None) -> None:
        received.set()
        stop.set()
        wake.set()

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, signal.SIG_IGN if received.is_set() else old)


def _is_tty(stream: TextIO | None) -> bool:
    """Whether ``stream`` is a terminal (``False`` for a closed or missing one)."""
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False


def _catalogs(args: Any) -> tuple[list[tuple[str, Path]], list[str], bool]:
    """``(catalogs, places looked, given on the command line)``."""
    names = [source.name for source in all_sources()]
    given = [(name, Path(p)) for name in names for p in (getattr(args, name, None) or [])]
    if given:
        return given, [f"{s}: {p}" for s, p in given], True
    defaults = default_catalogs()
    found = [(s, Path(p)) for s in names for p in defaults[s] if os.path.exists(p)]
    looked = [f"{s}: {p}" for s in names for p in defaults[s]]
    return found, looked, False


def _all_default_catalogs() -> list[tuple[str, Path]]:
    """Every standard location, whether or not it exists (rediscovery looks at all)."""
    defaults = default_catalogs()
    return [(s.name, Path(p)) for s in all_sources() for p in defaults[s.name]]



def catalog_options(sources: tuple[Source, ...] | None = None) -> str:
    """``"--claude DIR, --codex DIR, --opencode DB or --pi DIR"``: the catalog options (pure)."""
    options = [f"--{s.flag} {s.metavar}" for s in (sources or all_sources())]
    return options[0] if len(options) == 1 else ", ".join(options[:-1]) + " or " + options[-1]


def _report(gw: Gateway, watcher: str, as_json: bool, out: TextIO,
            handoff: Handoff | None = None) -> int:
    # Print (and hand off) before acknowledging: a kill between the two shows a
    # notice again after the restart instead of losing it (at least once).
    shown = gw.pending_notices(watcher)
    _print_notices(gw, shown, as_json, out, handoff, until=_marks(gw, watcher, 1))
    drained = gw.drain(watcher)
    late = [t for t in drained if t not in shown]
    if late:  # acknowledged now: each covered up to where its cursor's last_seen moved
        _print_notices(gw, late, as_json, out, handoff, until=_marks(gw, watcher, 0))
    return len(set(shown) | set(drained))


def _marks(gw: Gateway, watcher: str, which: int) -> dict[str, int]:
    """Per target, ``watcher``'s cursor's last_seen (``which`` 0) or frozen watermark (1):
    a notice lists only the changes it covers, so a change after its watermark is
    listed once, under its own follow-up (never raises: ``{}`` lists everything)."""
    try:
        with gw.read_pool.connection() as conn:
            return {k: marks[which] for k, marks in peek.cursor_marks(conn, watcher).items()}
    except Exception as exc:  # listing is a courtesy: never stop the watch
        logger.debug("cannot read the cursors of %s: %s", watcher, exc)
        return {}


_where_caches: weakref.WeakKeyDictionary[Gateway, dict[str, UpstreamWhere | None]] = (
    weakref.WeakKeyDictionary())
"""What each notified session of a gateway is (its project directory is read once)."""
_WHERE_CACHE_MAX = 4096


def _where(gw: Gateway, key: str) -> UpstreamWhere | None:
    """Which adopted session ``key`` is, or ``None`` without a link (never raises)."""
    _where_cache = _where_caches.setdefault(gw, {})
    if key in _where_cache:
        return _where_cache[key]
    try:
        link = upstream_service(gw).link_of(key, agent_id_of(key))
    except Exception as exc:  # naming the session is a courtesy: never stop the watch
        logger.debug("cannot read the link of %s: %s: %s", key, type(exc).__name__, exc)
        return None
    where = None if link is None else where_of(link)
    if len(_where_cache) >= _WHERE_CACHE_MAX:
        _where_cache.clear()
    _where_cache[key] = where
    return where


def _reconcile(gw: Gateway, text: str, until: dict[str, int] | None = None,
               ) -> NoticeRecord | None:
    """The notice with the events behind it (those up to ``until[key]``, what it covers,
    when given); ``None`` for a line that is not a notice."""
    match = NOTICE_PATTERN.search(text)
    if match is None:
        return None
    key, since = match["key"], int(match["since"])
    status = gw.session_status(key, changes_since=since)
    changes = status.state_changes
    top = (until or {}).get(key)
    events = changes.events if changes else ()
    if top is not None and top > since:
        events = tuple(e for e in events if e.sequence <= top)
    return NoticeRecord(
        notice=text, session_key=key, changes_since=since, state_version=status.state_version,
        events=events,
        history_gap=changes.history_gap if changes else False,
        truncated=changes.truncated if changes else False,
        earliest_available_sequence=changes.earliest_available_sequence if changes else 0,
        upstream=(where := _where(gw, key)), name=where_name(where))


def _print_notices(gw: Gateway, notices: list[str], as_json: bool, out: TextIO,
                   handoff: Handoff | None = None, *, until: dict[str, int] | None = None,
                   ) -> None:
    records = [r for r in (_reconcile(gw, text, until) for text in notices) if r is not None]
    for record in records:
        if as_json:
            out.write(msgspec.json.encode(record).decode() + "\n")
            continue
        out.write(f"notice: {record.notice}\n")
        if record.name is not None:
            out.write(f"  name: {record.name}\n")
        if record.upstream is not None:
            out.write(f"  in {describe(record.upstream)}\n")
        for event in record.events:
            turns = f" ({event.payload['turns']} turns)" if event.payload and \
                "turns" in event.payload else ""
            out.write(f"  #{event.sequence} {event.kind} by {event.actor_type}: "
                      f"{event.summary}{turns}\n")
    out.flush()
    if handoff is not None:
        for record in records:
            handoff(record)


def _exec_pool(args: Any, argv: list[str] | None) -> AbstractContextManager[ExecPool | None]:
    """The ``--exec`` pool (closed on exit, after ``EXEC_SHUTDOWN_GRACE_S``), or nothing."""
    if argv is None:
        return nullcontext()
    timeout = getattr(args, "exec_timeout", None)
    jobs = getattr(args, "exec_jobs", None)
    return ExecPool(argv, timeout_s=DEFAULT_TIMEOUT_S if timeout is None else timeout,
                    jobs=DEFAULT_JOBS if jobs is None else jobs,
                    shutdown_grace_s=EXEC_SHUTDOWN_GRACE_S)


def _hand_off(pool: ExecPool, watcher: str, record: NoticeRecord) -> None:
    """Queue one ``--exec`` run for ``record`` (never blocks; a skip is logged)."""
    pool.submit(msgspec.json.encode(record) + b"\n", {
        "SSA_SESSION_KEY": record.session_key,
        "SSA_CHANGES_SINCE": str(record.changes_since),
        "SSA_STATE_VERSION": str(record.state_version),
        "SSA_WATCHER": watcher,
    }, f"{record.session_key} changesSince {record.changes_since}")


def _discover_all(catalogs: list[tuple[str, Path]], err: TextIO, *, warn: bool
                  ) -> list[Candidate]:
    candidates: list[Candidate] = []
    for source, root in catalogs:
        found = list(discover(source, root))
        if warn and not found and unreadable_store(root) is None:  # else it said why
            why = "does not exist" if not root.exists() else "holds no sessions"
            found_source = find_source(source)
            flag = found_source.flag if found_source is not None else source
            err.write(f"ssa watch: --{flag} {root} {why}\n")
        candidates += found
    return candidates


def run_watch(args: Any, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run ``ssa watch`` with parsed ``args``; returns the exit code (0).

    Adopts every session found (at its current end), then before each scan
    looks for sessions that appeared since and adopts them too: from their
    start when they are new (:func:`is_new_since`), each announced on ``out``
    as it appears. A notice is printed as soon as
    its turn commits: file notifications scan a changed transcript at once
    (``on_wake`` wakes this loop), and every ``--interval`` a fallback scan
    covers whatever notifications missed. Blocks the calling thread until
    ``--scans`` fallback scans are done or SIGINT/SIGTERM arrives (handled
    only when called from the main thread); the gateway is closed cleanly
    either way. With ``--json`` every line on stdout is one JSON object.

    With ``--exec`` each printed notice is also handed to that command
    (:mod:`actors.cli.execpool`): its :class:`NoticeRecord` as JSON on stdin,
    ``SSA_SESSION_KEY``, ``SSA_CHANGES_SINCE``, ``SSA_STATE_VERSION`` and
    ``SSA_WATCHER`` in its environment; runs never block this loop, and
    when it stops they get ``EXEC_SHUTDOWN_GRACE_S`` seconds before being
    killed. Raises :class:`SessionStateError` at once when the command's
    program is not found.
    """
    command = getattr(args, "exec", None)
    argv = None if command is None else command_argv(
        command, shell=bool(getattr(args, "shell", False)))
    catalogs, looked, given = _catalogs(args)
    if not catalogs:
        if args.json:
            out.write(msgspec.json.encode({"catalogs": [], "looked": looked}).decode() + "\n")
        else:
            out.write("ssa watch: no session catalogs found. Looked in:\n")
            for place in looked:
                out.write(f"  {place}\n")
            out.write(f"Point it elsewhere with {catalog_options()}.\n")
        return 0
    stop, attention = StopFlag(), Wakeup()

    def wake(watcher: str) -> None:  # in whichever thread queued the notice
        attention.set()

    # The pool closes while these signal handlers are still installed: a second
    # Ctrl-C during its grace cannot break off the cleanup and leave a command running.
    with _stop_on_signals(stop, attention), _exec_pool(args, argv) as pool, \
            Gateway.open(args.db, monitor=False, on_wake=wake, hosts=(args.watcher,)) as gw, \
            ExitStack() as stack:
        handoff = None if pool is None else partial(_hand_off, pool, args.watcher)
        if gw.shared_at_open and args.watcher == DEFAULT_WATCHER:
            err.write(f"ssa watch: another gateway has this database open; watching as "
                      f"{args.watcher} takes that watcher's wakes and drains its notices. "
                      "Pass --watcher agent:main:ssa-watch to leave them to it.\n")
            err.flush()
        upstream_service(gw).mark_monitoring()  # it scans what it adopts: lease new links to it
        adopter = Adopter(gw, args.watcher, stop, err,
                           announce=partial(announce, as_json=args.json, out=out))
        adopter.adopt(_discover_all(catalogs, err, warn=given), progress=_is_tty(err))
        # Default locations that did not exist at start may appear later.
        later = catalogs if given else _all_default_catalogs()
        appeared = _Appeared(attention)
        if not getattr(args, "poll_only", False):
            gw.start_upstream_notifications()  # before the summary says we are watching
            stack.enter_context(_catalog_feed(later, appeared))
        _summary(adopter, args, out, looked)
        scans = 0
        next_scan = time.monotonic() + args.interval
        while not stop.is_set() and (args.scans is None or scans < args.scans):
            remaining = next_scan - time.monotonic()
            if remaining > 0:
                if attention.wait(remaining):
                    roots = appeared.take()
                    if roots and not stop.is_set():  # a new transcript: adopt it now
                        _adopt_new(gw, adopter, [c for c in later if c[1] in roots], err)
                    if not stop.is_set():
                        # notified turns, at once
                        _report(gw, args.watcher, args.json, out, handoff)
                continue
            adopter.adopt(_discover_all(later, err, warn=False), progress=False, later=True)
            _fallback_scan(gw)
            scans += 1
            next_scan = time.monotonic() + args.interval
            _report(gw, args.watcher, args.json, out, handoff)
    return 0


class _Appeared:
    """Catalog roots in which a file or folder appeared, for the watch loop (thread-safe)."""

    def __init__(self, attention: Wakeup) -> None:
        self._lock = threading.Lock()
        self._roots: set[Path] = set()
        self._attention = attention

    def __call__(self, roots: set[Path]) -> None:
        """Note ``roots`` and wake the loop (the catalog feed's thread; non-blocking)."""
        with self._lock:
            self._roots |= roots
        self._attention.set()

    def take(self) -> set[Path]:
        """The roots noted since the last call, as absolute paths (non-blocking)."""
        with self._lock:
            roots, self._roots = self._roots, set()
        return roots


@contextmanager
def _catalog_feed(catalogs: list[tuple[str, Path]], on_new: _Appeared) -> Iterator[None]:
    """Watch the JSONL catalog roots for new entries while the block runs (see
    :mod:`actors.monitors.catalogfeed`); ``on_new`` gets the roots as given in ``catalogs``."""
    by_abs = {Path(os.path.abspath(root)): root for source, root in catalogs
              if not in_store(source)}
    if not by_abs:
        yield
        return
    feed = CatalogFeed(by_abs, lambda roots: on_new({by_abs[r] for r in roots if r in by_abs}))
    try:
        yield
    finally:
        if feed.close(EXEC_SHUTDOWN_GRACE_S):
            logger.warning("the catalog notification thread did not stop in time")


def _adopt_new(gw: Gateway, adopter: Adopter, catalogs: list[tuple[str, Path]],
               err: TextIO) -> None:
    """Rediscover ``catalogs`` after a directory event; scan what got linked at once.

    A session created while watching is read from its start, so its first
    prompt is reported by that scan (queued on the gateway's workers; its
    notice wakes the loop). Blocks on the listing and the adoptions.
    """
    adopter.adopt(_discover_all(catalogs, err, warn=False), progress=False, later=True)
    if adopter.linked:
        upstream_service(gw).scan_soon((key, adopter.agent) for key in adopter.linked)


def _fallback_scan(gw: Gateway) -> None:
    """One fallback cycle that leaves a backlog to soon scans (their notices wake the loop).

    ``scan_upstream()`` would read a long line to its end before returning,
    and the loop prints notices only between cycles. Never raises (logged).
    """
    try:
        upstream_service(gw).scan_cycle(follow_backlog=False)
    except Exception as exc:  # a scan never stops the watch
        logger.warning("the fallback scan failed: %s: %s", type(exc).__name__, exc)


def _summary(adopter: Adopter, args: Any, out: TextIO, looked: list[str]) -> None:
    if args.json:
        out.write(msgspec.json.encode({
            "adopted": dict(adopter.adopted), "notMonitored": dict(adopter.skipped),
            "watcher": args.watcher, "intervalS": args.interval, "catalogs": looked,
        }).decode() + "\n")
    else:
        summary = ", ".join(f"{s} {n}" for s, n in sorted(adopter.adopted.items())) or "none"
        count = sum(adopter.adopted.values())
        line = f"adopted {count} session{'' if count == 1 else 's'} ({summary})"
        if adopter.skipped:
            line += "; not monitored: " + ", ".join(
                f"{n} {why}" for why, n in sorted(adopter.skipped.items()))
        notifications = "; file notifications off" if getattr(args, "poll_only", False) else ""
        out.write(line + f"; watching as {args.watcher}, scanning every {args.interval:g}s"
                  f"{notifications}\n")
        if not adopter.adopted:
            out.write(f"(looked in: {'; '.join(looked)})\n")
    out.flush()
