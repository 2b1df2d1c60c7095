"""Notice text and the per-watcher notice queue (pure, no threads).

The text is byte-stable for a given target and ``last_seen``, which is what
lets the queue deduplicate twenty rapid changes into one line (seed, "Notices:
one, not many"; anchor §3.5).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["NoticeQueue", "QueueEntry", "notice_text"]


def notice_text(target_key: str, last_seen: int) -> str:
    """Return the one-line notice for ``target_key`` (``api-contract.md``, "Notices").

    Args:
        target_key: the changed session; validated keys hold no quotes or
            control characters, so the text stays one unforgeable line.
        last_seen: the watcher's acknowledged version, the ``changesSince`` base.
    """
    return (
        f'Session "{target_key}" changed (other actor). Reconcile before acting: '
        f'session_status sessionKey "{target_key}" changesSince {last_seen}.'
    )


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """One queued system event of a watcher.

    Attributes:
        text: the line shown to the watcher.
        target: ``(target_key, target_agent_id)`` for session-state notices,
            ``None`` for other system events.
        context_key: the host's dedupe context for other system events.
        last_seen: a notice's ``changesSince`` base (``None`` for other events).
    """

    text: str
    target: tuple[str, str] | None = None
    context_key: str | None = None
    last_seen: int | None = None


OpenNotice = tuple[tuple[str, str], int]
"""A durable open notice: ``((target_key, target_agent_id), last_seen)``."""


class NoticeQueue:
    """A watcher's system-event queue in one process (anchor §3.5, queue semantics).

    Session-state notices are durable (the open cursors of the signal log,
    shared by every process); this queue places them among the process's
    own system events. :meth:`reconcile` brings it in line with the durable
    open notices: a notice consumed or replaced elsewhere leaves, a new one
    joins at the end. At most ``limit`` entries; on overflow the oldest is
    dropped, and a dropped notice stays out (it is still open in the log)
    until the next :meth:`drain` makes room. A notice holds one slot per
    target: an identical text is a no-op, a changed text replaces the old
    entry and moves to the end. Other events are deduplicated on identical
    text and context key (with no context key, only against the last entry).

    Not thread-safe: one session actor owns each queue. Pure: no I/O.
    """

    def __init__(self, limit: int = 20, entries: tuple[QueueEntry, ...] = (),
                 evicted: dict[tuple[tuple[str, str], str], int] | None = None) -> None:
        self._limit = limit
        self._entries: deque[QueueEntry] = deque(entries)
        self.evicted: dict[tuple[tuple[str, str], str], int] = dict(evicted or {})
        """``(target, text)`` of open notices overflow dropped, with the pair's material
        sequence then; kept out until a drain or a newer material event (anchor
        §4.1 item 11: a lost notice heals itself on the next material event)."""
        self._material: dict[tuple[str, str], int] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def enqueue_notice(self, text: str, target: tuple[str, str],
                       last_seen: int | None = None) -> bool:
        """Queue ``text`` as the notice for ``target``.

        Returns:
            ``True`` when the queue changed (newly queued), ``False`` for a
            repeat of the queued text.
        """
        same = [e for e in self._entries if e.target == target]
        if len(same) == 1 and same[0].text == text:
            return False
        if same:
            self._entries = deque(e for e in self._entries if e.target != target)
        self._append(QueueEntry(text=text, target=target, last_seen=last_seen))
        return True

    def reconcile(self, open_notices: list[tuple[tuple[str, str], int, int, str]]) -> None:
        """Make the queued notices those of ``open_notices``.

        Args:
            open_notices: ``(target, last_seen, material, text)`` of every open
                notice, oldest first.

        Queued notices whose pair is no longer open with that text are
        removed; open ones not queued are appended in the given order. One
        that overflow dropped (see :attr:`evicted`) comes back only when there
        is room (another process drained the ones that filled the queue) or a
        newer material event arrived for its pair. Other events stay.
        """
        current = {target: text for target, _ls, _mt, text in open_notices}
        self._material = {target: mt for target, _ls, mt, _text in open_notices}
        self.evicted = {item: mt for item, mt in self.evicted.items()
                        if current.get(item[0]) == item[1]
                        and self._material.get(item[0], 0) <= mt}
        kept = deque(e for e in self._entries
                     if e.target is None or current.get(e.target) == e.text)
        if len(kept) != len(self._entries):
            self._entries = kept
        queued = {e.target for e in self._entries if e.target is not None}
        for target, last_seen, _material, text in open_notices:
            if target in queued:
                continue
            if (target, text) in self.evicted:
                if len(self._entries) >= self._limit:
                    continue  # dropped for want of room: back only when there is some
                del self.evicted[(target, text)]
            self._append(QueueEntry(text=text, target=target, last_seen=last_seen))
            queued.add(target)

    def enqueue_event(self, text: str, context_key: str | None = None) -> bool:
        """Queue an ordinary system event; returns whether it was newly queued."""
        text = text.strip()
        if not text:
            return False
        context = context_key.strip().lower() if context_key else None
        if context is not None:
            if any(e.text == text and e.context_key == context for e in self._entries):
                return False
        elif self._entries and self._entries[-1].text == text and self._entries[-1].target is None:
            return False
        self._append(QueueEntry(text=text, context_key=context))
        return True

    def withdraw(self, target: tuple[str, str]) -> int:
        """Remove the notices for ``target``; returns how many were removed."""
        before = len(self._entries)
        self._entries = deque(e for e in self._entries if e.target != target)
        return before - len(self._entries)

    def withdraw_all_notices(self) -> int:
        """Remove every session-state notice; returns how many were removed."""
        before = len(self._entries)
        self._entries = deque(e for e in self._entries if e.target is None)
        self.evicted.clear()
        return before - len(self._entries)

    def drain(self) -> list[QueueEntry]:
        """Consume and return every entry, oldest first; dropped notices may come back."""
        entries = list(self._entries)
        self._entries.clear()
        self.evicted.clear()
        return entries

    def take(self, texts: frozenset[str]) -> list[QueueEntry]:
        """Consume and return the entries whose text is in ``texts``, oldest first.

        The rest stay queued in order; notices overflow dropped stay out
        (they were not shown, so they are not consumed).
        """
        taken = [e for e in self._entries if e.text in texts]
        if taken:
            self._entries = deque(e for e in self._entries if e.text not in texts)
        return taken

    def requeue(self, entries: list[QueueEntry]) -> None:
        """Put drained ``entries`` back in front, oldest first (a drain that could not
        acknowledge them); entries whose target is queued again meanwhile are skipped."""
        queued = {e.target for e in self._entries if e.target is not None}
        back = [e for e in entries if e.target is None or e.target not in queued]
        self._entries.extendleft(reversed(back))
        while len(self._entries) > self._limit:
            dropped = self._entries.pop()  # the newest: the restored ones were first
            if dropped.target is not None:
                self.evicted[(dropped.target, dropped.text)] = self._material.get(
                    dropped.target, 0)

    def texts(self) -> list[str]:
        """Return the queued texts, oldest first, without consuming them."""
        return [e.text for e in self._entries]

    def entries(self) -> tuple[QueueEntry, ...]:
        """Return the queued entries, oldest first, without consuming them."""
        return tuple(self._entries)

    def _append(self, entry: QueueEntry) -> None:
        self._entries.append(entry)
        while len(self._entries) > self._limit:
            dropped = self._entries.popleft()
            if dropped.target is not None:
                material = self._material.get(dropped.target, 0)
                self.evicted[(dropped.target, dropped.text)] = material
