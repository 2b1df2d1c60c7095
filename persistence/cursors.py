"""Cursor arithmetic: the frozen watermark and acknowledge on drain (pure functions).

A cursor is the state of one watcher/target pair (seed, "Notices: one, not
many"; anchor §3.3, §3.4, §3.7, §3.8). Its three watermarks always satisfy
``last_seen <= notified <= material``; a notice is pending while
``material > last_seen``. These functions do no I/O, are thread-safe and
never block; the persistence layer applies them inside its transactions.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Cursor", "acknowledge", "is_pending", "material_update", "refreeze", "seed"]


class Cursor(NamedTuple):
    """The three watermarks of a watcher/target cursor (sequence numbers)."""

    last_seen: int
    """What the watcher acknowledged: its ``changesSince`` base."""
    notified: int
    """The frozen watermark: the highest material sequence the open notice covers."""
    material: int
    """The highest notify-eligible sequence seen for the pair."""


def seed(sequence: int) -> Cursor:
    """A cursor synced as of ``sequence`` (spawn seed or registration at the head)."""
    return Cursor(sequence, sequence, sequence)


def material_update(current: Cursor | None, sequence: int) -> Cursor:
    """Apply a material event ``sequence`` to ``current`` (anchor §3.4, freeze rule).

    With no open notice (``notified == last_seen``) the notice now covers up
    to ``sequence``; with one open, its frozen watermark stays put and only
    ``material`` advances. A missing cursor starts from zero.
    """
    last_seen, notified = (current.last_seen, current.notified) if current else (0, 0)
    frozen = sequence if notified == last_seen else notified
    return Cursor(last_seen, frozen, max(sequence, current.material if current else 0))


def acknowledge(current: Cursor) -> tuple[Cursor, int | None]:
    """Acknowledge the drained notice of ``current`` (anchor §3.7).

    Returns:
        ``(new_cursor, follow_up)``: the cursor moves ``last_seen`` to the
        frozen watermark only, never to the head; ``follow_up`` is the
        ``last_seen`` of the one follow-up notice to open when material
        events arrived between queueing and draining, else ``None``.
    """
    covered = max(current.material, current.notified)
    new = Cursor(current.notified, covered, current.material)
    follow_up = current.notified if current.material > current.notified else None
    return new, follow_up


def refreeze(current: Cursor) -> Cursor:
    """Re-freeze a pending cursor to cover everything pending (restart sweep, §3.8)."""
    return Cursor(current.last_seen, current.material, current.material)


def is_pending(current: Cursor) -> bool:
    """Whether the pair has work the watcher has not acknowledged."""
    return current.material > current.last_seen
