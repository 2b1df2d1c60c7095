"""Scan leases and the retries they owe: when a link's next scan is due again.

What lives here: :class:`LeaseKeeper`, owned by the upstream service. It
knows whether this process monitors its links (so the links it creates start
leased to it), and keeps the due times of the scans that run later than the
next event: the settling scan after a transcript was cut short
(:data:`SETTLE_MS`) and the retry just after another process's scan lease
lapses. The cadence or the feed thread collects the due ones with
:meth:`LeaseKeeper.due`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["SETTLE_MS", "LeaseKeeper"]

SETTLE_MS = 500
"""How soon after a transcript was seen cut short its settling scan runs, in ms."""

Ident = tuple[str, str]


class LeaseKeeper:
    """This process's scan leases and the scans owed later (settling, lease retries).

    Thread-safe; every method is non-blocking and runs in any thread.

    Args:
        lease_owner: this gateway's id for upstream scan leases (``None``: no leases).
        lease_ms: how long a lease this process takes lasts, in ms.
        clock: epoch-ms clock.
    """

    def __init__(self, *, lease_owner: str | None, lease_ms: int,
                 clock: Callable[[], int]) -> None:
        self._owner = lease_owner
        self._lease_ms = lease_ms
        self._clock = clock
        self._monitoring = False
        self._lock = threading.Lock()
        self._settles: dict[Ident, int] = {}
        self._lease_waits: dict[Ident, int] = {}

    def mark_monitoring(self) -> None:
        """This process scans its links: links it adopts from now on start leased to it."""
        self._monitoring = True

    def new_lease(self) -> dict[str, Any]:
        """The scan lease a link this process creates starts with (no claim write later).

        Returns:
            ``UpsertLink`` keyword arguments: ``lease_owner`` and
            ``lease_expires_at`` (epoch ms), or nothing when this process
            does not monitor or scans without leases.
        """
        if self._owner is None or not self._monitoring:
            return {}
        return {"lease_owner": self._owner, "lease_expires_at": self._clock() + self._lease_ms}

    def settle_later(self, ident: Ident) -> None:
        """Owe ``ident`` a scan :data:`SETTLE_MS` from now (its file shrank, or a
        decision waits on a write in flight)."""
        with self._lock:
            self._settles[ident] = self._clock() + SETTLE_MS

    def after_lease(self, ident: Ident, expires_at: int, updated_at: int) -> None:
        """Owe ``ident`` a scan just after another process's lease lapses (epoch ms).

        If by then the link moved on (``updated_at`` changed: the holder
        scanned it), the retry stops there.
        """
        with self._lock:
            first = self._lease_waits.setdefault(ident, updated_at)
            if first != updated_at:
                del self._lease_waits[ident]  # the holder handled it
                return
            at = expires_at + 1
            self._settles[ident] = min(self._settles.get(ident, at), at)

    def scanned(self, ident: Ident) -> None:
        """``ident`` was scanned here: no retry after a lease is owed."""
        with self._lock:
            self._lease_waits.pop(ident, None)

    def due(self) -> list[Ident]:
        """Take the owed scans whose time has come (each is returned once)."""
        now = self._clock()
        with self._lock:
            due = [ident for ident, at in self._settles.items() if at <= now]
            for ident in due:
                del self._settles[ident]
        return due
