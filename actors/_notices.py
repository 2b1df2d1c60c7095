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
    """

    text: str
    target: tuple[str, str] | None = None
    context_key: str | None = None


class NoticeQueue:
    """A watcher's in-memory system-event queue (anchor §3.5, queue semantics).

    At most ``limit`` entries; on overflow the oldest is dropped. Session-state
    notices hold one slot per target: an identical text is a no-op, a changed
    text replaces the old entry and moves to the end. Other events are
    deduplicated on identical text and context key (with no context key, only
    against the last entry).

    Not thread-safe: one session actor owns each queue.
    """

    def __init__(self, limit: int = 20, entries: tuple[QueueEntry, ...] = ()) -> None:
        self._limit = limit
        self._entries: deque[QueueEntry] = deque(entries)
        self.dropped_notice = False
        """Set when overflow dropped a session-state notice; cleared by the owner."""

    def __len__(self) -> int:
        return len(self._entries)

    def enqueue_notice(self, text: str, target: tuple[str, str]) -> bool:
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
        self._append(QueueEntry(text=text, target=target))
        return True

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
        return before - len(self._entries)

    def drain(self) -> list[QueueEntry]:
        """Consume and return every entry, oldest first."""
        entries = list(self._entries)
        self._entries.clear()
        return entries

    def texts(self) -> list[str]:
        """Return the queued texts, oldest first, without consuming them."""
        return [e.text for e in self._entries]

    def entries(self) -> tuple[QueueEntry, ...]:
        """Return the queued entries, oldest first, without consuming them."""
        return tuple(self._entries)

    def _append(self, entry: QueueEntry) -> None:
        self._entries.append(entry)
        while len(self._entries) > self._limit:
            if self._entries.popleft().target is not None:
                self.dropped_notice = True
