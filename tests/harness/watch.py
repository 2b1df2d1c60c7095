"""``ssa watch --json`` run beside the tools, and its events compared with the action log.

:class:`SsaWatch` starts ``ssa watch --json --interval 1`` in a throw-away
home (the tools' own: it finds their catalogs at the default places) and
reads its JSON lines in a thread of its own. Every reconciled notice it
prints carries the events behind it; :meth:`SsaWatch.human_turns` counts the
``human_direct_message`` events among them (each once, by its sequence; an
event of a scan that saw several typed turns says so in ``payload.turns``).

:func:`compare_watch` is the ground truth check: one ``human_direct_message``
per burst of typed turns (a scan that saw them), as many turns as the
harness typed, and none for any other action. A test makes every typed turn
its own burst by waiting (:meth:`SsaWatch.wait_turns`) for its event before
the next action.

Thread-safety: the reader thread only appends under a lock; the test thread
calls every method. Every wait has a timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.harness.actions import Action
from tests.harness.home import Home

__all__ = ["HUMAN_KIND", "SsaWatch", "WatchComparison", "WatchEvent", "compare_watch"]

HUMAN_KIND = "human_direct_message"
"""The event kind a typed turn records."""
_T = TypeVar("_T")

SSA = str(Path(sys.executable).with_name("ssa"))
"""The ``ssa`` console script of the running interpreter's environment."""


@dataclass(frozen=True)
class WatchEvent:
    """One ``human_direct_message`` event ``ssa watch`` reported.

    Attributes:
        sequence: its signal-log sequence number.
        session_key: the session it is about (``agent:main:<source>:<id>``).
        turns: how many typed turns the scan behind it saw (``payload.turns``, else 1).
        seen_at_ms: wall-clock epoch milliseconds when the line was read.
    """

    sequence: int
    session_key: str
    turns: int
    seen_at_ms: int


class SsaWatch:
    """``ssa watch --json --interval 1`` in ``home``; stopped by :meth:`close`.

    Args:
        home: the tools' throw-away home (its ``HOME`` and XDG directories;
            the database is the default one inside it).
        interval_s: the fallback scan interval, in seconds.
        args: more command-line arguments (``--aider DIR`` for a catalog with
            no standard location).

    Create it before the tools write their first session: sessions that
    appear while it runs are read from their start. ``close`` terminates it
    (SIGTERM, then SIGKILL after 15 s) and joins the reader.
    """

    def __init__(self, home: Home, *, interval_s: float = 1.0, args: Sequence[str] = ()
                 ) -> None:
        # Default catalogs that do not exist yet are looked for again before every
        # scan; one that exists at start is adopted at once (all of them empty here).
        (home.root / ".claude" / "projects").mkdir(parents=True, exist_ok=True)
        env = {**home.env(), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "CODEX_HOME": str(home.root / ".codex")}
        self.argv = [SSA, "watch", "--json", "--interval", f"{interval_s:g}", *args]
        self.process = subprocess.Popen(self.argv, env=env, text=True, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True)
        self._lock = threading.Condition(threading.RLock())
        self.lines: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._readers = [threading.Thread(target=self._read, daemon=True, name="ssa-watch-out"),
                         threading.Thread(target=self._read_err, daemon=True,
                                          name="ssa-watch-err")]
        for reader in self._readers:
            reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                record = json.loads(line)
            except ValueError:
                record = {"unparsed": line}
            with self._lock:
                self.lines.append({**record, "_seen_at_ms": time.time_ns() // 1_000_000}
                                  if isinstance(record, dict) else {"unparsed": line})
                self._lock.notify_all()

    def _read_err(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._lock:
                self.errors.append(line.rstrip("\n"))

    def __enter__(self) -> SsaWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def events(self) -> list[WatchEvent]:
        """Every ``human_direct_message`` event reported so far, each once, in order."""
        with self._lock:
            lines = list(self.lines)
        seen: dict[int, WatchEvent] = {}
        for line in lines:
            for event in line.get("events") or ():
                if not isinstance(event, dict) or event.get("kind") != HUMAN_KIND:
                    continue
                payload = event.get("payload") or {}
                turns = payload.get("turns", 1) if isinstance(payload, dict) else 1
                seen.setdefault(int(event["sequence"]), WatchEvent(
                    int(event["sequence"]), str(event.get("sessionKey")), int(turns),
                    int(line["_seen_at_ms"])))
        return sorted(seen.values(), key=lambda e: e.sequence)

    def human_turns(self) -> int:
        """The typed turns its events account for (the sum of their ``turns``)."""
        return sum(e.turns for e in self.events())

    def adopted(self) -> list[dict[str, Any]]:
        """The ``adoptedSession`` and ``notMonitoredSession`` announcements so far."""
        with self._lock:
            return [line for line in self.lines
                    if "adoptedSession" in line or "notMonitoredSession" in line]

    def wait_summary(self, timeout_s: float = 30.0) -> dict[str, Any]:
        """Block until it printed its start-up summary (``adopted``...); returns it.

        Raises:
            TimeoutError: not within ``timeout_s`` seconds, or it exited first.
        """
        return self._wait(lambda: next((line for line in self.lines if "adopted" in line),
                                       None), timeout_s, "its start-up summary")

    def wait_turns(self, count: int, timeout_s: float = 30.0) -> list[WatchEvent]:
        """Block until its events account for at least ``count`` typed turns; returns them.

        Raises:
            TimeoutError: not within ``timeout_s`` seconds (the message holds its output).
        """
        def enough() -> list[WatchEvent] | None:
            events = self.events()  # the lock is re-entrant (an RLock)
            return events if sum(e.turns for e in events) >= count else None

        return self._wait(enough, timeout_s, f"{count} typed turns")

    def wait_not_monitored(self, timeout_s: float = 30.0) -> dict[str, Any]:
        """Block until it announced a ``notMonitoredSession``; returns that line.

        A prompted Gemini CLI or Qwen Code session without the interactive UI's
        evidence is decided only once its file is ``EVIDENCE_GRACE_S`` old, so
        this announcement comes later than a quiet ``settle``.

        Raises:
            TimeoutError: not within ``timeout_s`` seconds (the message holds its output).
        """
        return self._wait(lambda: next((line for line in self.lines
                                        if "notMonitoredSession" in line), None),
                          timeout_s, "a notMonitoredSession announcement")

    def settle(self, quiet_s: float = 3.0, timeout_s: float = 30.0) -> None:
        """Block until it printed nothing for ``quiet_s`` seconds (at least three fallback
        scans at the default interval): what is still to come would have come.

        Raises:
            TimeoutError: it kept printing for ``timeout_s`` seconds.
        """
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while True:
                count = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"ssa watch kept printing: {self._tail()}")
                self._lock.wait(min(quiet_s, left))
                if len(self.lines) == count and self.process.poll() is None:
                    return

    def _wait(self, found: Callable[[], _T | None], timeout_s: float, what: str) -> _T:
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while True:
                result = found()
                if result is not None:
                    return result
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    raise TimeoutError(f"ssa watch did not report {what} within {timeout_s:.0f}"
                                       f" s (exit {self.process.poll()}): {self._tail()}")
                self._lock.wait(min(left, 1.0))

    def _tail(self) -> str:
        return f"stdout {self.lines[-8:]!r}; stderr {self.errors[-8:]!r}"

    def close(self) -> None:
        """Stop it (SIGTERM, SIGKILL after 15 s) and join its readers; idempotent."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        for reader in self._readers:
            reader.join(timeout=10)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@dataclass(frozen=True)
class WatchComparison:
    """The outcome of :func:`compare_watch`.

    Attributes:
        typed: the typed actions compared.
        events: the ``human_direct_message`` events compared.
        precision: typed turns the events account for that the harness typed,
            over the turns they account for (1.0 when none).
        recall: typed actions accounted for, over the typed actions (1.0 when none).
        bursts_ok: every event stands for exactly one burst: no more events than
            typed actions.
    """

    typed: tuple[Action, ...]
    events: tuple[WatchEvent, ...]
    precision: float
    recall: float
    bursts_ok: bool

    def report(self) -> str:
        """A readable account for an assertion message."""
        lines = [f"ssa watch: precision {self.precision:.3f}, recall {self.recall:.3f}, "
                 f"{len(self.events)} events for {len(self.typed)} typed actions"]
        lines += [f"  typed #{a.seq} at {a.at_ms} {a.agent}: {a.text!r}" for a in self.typed]
        lines += [f"  event #{e.sequence} at {e.seen_at_ms} {e.session_key} turns={e.turns}"
                  for e in self.events]
        return "\n".join(lines)


def compare_watch(events: Iterable[WatchEvent], actions: Iterable[Action]) -> WatchComparison:
    """Compare ``ssa watch``'s ``human_direct_message`` events with ``actions``; pure.

    The ``human`` actions (typed prompts, text typed after a slash command) are what
    a person typed; every other action must add no turn. Events carry no text, so the match is
    by count: the turns the events account for against the typed actions.
    """
    typed = tuple(a for a in actions if a.human)
    found = tuple(events)
    turns = sum(e.turns for e in found)
    hits = min(turns, len(typed))
    precision = hits / turns if turns else 1.0
    recall = hits / len(typed) if typed else 1.0
    return WatchComparison(typed, found, precision, recall, len(found) <= len(typed))
