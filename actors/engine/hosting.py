"""Hosting: which watchers this process runs, and the signal that wakes them.

A process declares the watchers whose agent loop it runs (``Gateway.open(...,
hosts=...)`` or ``Gateway.host``). Each is a durable lease in the signal log,
renewed every third of ``lease_ms``. A producer in another process that opens
a notice for a hosted watcher addresses a wake row to it instead of waking
locally (:mod:`persistence._leases`); this process learns of the row from its
backend's wake signal (SQLite: ``PRAGMA data_version`` on its own connection,
then the wake table's newest id; PostgreSQL: ``LISTEN``), claims it in one
transaction and calls ``on_wake``. Claiming marks the row, so exactly one
host gets each wake.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pykka

from persistence import Backend, ClaimWakes, HostWatchers, StorageError, WakeSignal, submit

__all__ = ["Hosting"]

logger = logging.getLogger(__name__)

_PROBE_ERRORS = (StorageError, pykka.Timeout, pykka.ActorDeadError)
_WAIT_S = 0.5
"""Longest single wait of the hosting thread (it also renews leases on time)."""


class Hosting:
    """This process's hosting leases and the probe that delivers wakes addressed to them.

    Args:
        backend: the signal log's backend (it gives the wake signal).
        persistence: the persistence actor (leases and claims are writes).
        host_id: this gateway's id in the leases.
        clock: ``() -> int`` epoch ms; lease expiries use it.
        lease_ms: lease duration in ms.
        probe_interval_ms: probe period of the background thread, in ms.
        timeout: seconds each write may take.
        wake: calls ``on_wake`` for a watcher (through the waker actor).

    Thread-safe. The hosting thread (``ssa-hosting``, a daemon) starts with
    the first hosted watcher and stops in :meth:`stop`. On SQLite it probes
    every ``probe_interval_ms`` while other connections commit and backs off
    to three times that while none do; on PostgreSQL it blocks on ``LISTEN``.
    """

    def __init__(self, *, backend: Backend, persistence: pykka.ActorRef[Any], host_id: str,
                 clock: Callable[[], int], lease_ms: int, probe_interval_ms: int,
                 timeout: float, wake: Callable[[str], None]) -> None:
        self._persistence = persistence
        self.host_id = host_id
        self._clock = clock
        self._lease_ms = lease_ms
        self._interval_s = probe_interval_ms / 1000
        self._timeout = timeout
        self._wake = wake
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self._watchers: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._signal: WakeSignal = backend.wake_signal(
            self._stop, self._interval_s, lambda watcher: watcher in self._watchers)
        self._retry = False
        self._failing = False
        self.probes = 0
        """Probes run so far (for benchmarks and tests)."""

    @property
    def watchers(self) -> frozenset[str]:
        """The watchers this process hosts (empty once stopped; any thread; non-blocking)."""
        with self._lock:
            return frozenset() if self._stop.is_set() else frozenset(self._watchers)

    def host(self, watchers: tuple[str, ...]) -> int:
        """Take the hosting leases of ``watchers`` and deliver the wakes owed to them.

        Owed: wakes other processes addressed to these watchers that nobody
        took, and wakes a host that died (or closed, or stopped hosting) took
        but whose notice is still open, one per notice. Notices woken where
        they were caused are not woken again. Blocks on one write (the
        claim takes the leases, see :meth:`claim`).

        Returns:
            How many owed wakes were delivered.

        Raises:
            StorageError: the lease could not be written.
        """
        with self._lock:
            added = set(watchers) - self._watchers
            self._watchers.update(watchers)
            start = self._thread is None and not self._stop.is_set()
            if start:
                self._thread = threading.Thread(target=self._run, name="ssa-hosting",
                                                daemon=True)
        if start and self._thread is not None:
            self._thread.start()
        try:
            return self.claim()
        except BaseException:
            with self._lock:  # not hosted after all
                self._watchers.difference_update(added)
            raise

    def unhost(self, watchers: tuple[str, ...]) -> None:
        """Drop the hosting leases of ``watchers`` (their wakes then run where caused).

        Raises:
            StorageError: the lease could not be written.
        """
        with self._lock:
            self._watchers.difference_update(watchers)
        # Wakes owed to them stay for whichever process hosts them next.
        submit(self._persistence, HostWatchers(
            host_id=self.host_id, watchers=watchers, expires_at=0, release=True),
            timeout=self._timeout)

    def probe(self, timeout_s: float = 0.0) -> int:
        """One probe: if a wake may have been addressed here, claim.

        A claim that failed (the write lock stayed busy, the disk failed) is
        retried by the next probe whatever the database did meanwhile.

        Args:
            timeout_s: how long to wait for the signal (``0``: just look).

        Returns:
            How many wakes were delivered. Blocks on the signal and one read
            (and a write when there is something to claim). Any thread.
        """
        signalled = self._signal.wait(timeout_s)
        with self._probe_lock:
            self.probes += 1
            if not signalled and not self._retry:
                return 0
            self._retry = True  # until the claim below has committed
        return self.claim()

    def claim(self) -> int:
        """Claim and wake every wake addressed to a watcher this process hosts.

        The claim first takes this process's leases on all its watchers
        again for ``lease_ms`` (so it is also the renewal, every third of
        ``lease_ms``): a lease that lapsed, or a lease row deleted, while it
        stalled comes back, and wakes addressed here meanwhile are taken, as
        are those a co-host that died had taken but not seen through.

        Returns:
            How many wakes were delivered (one ``on_wake`` each).

        Raises:
            StorageError: the claim could not be written (the next probe retries).
        """
        watchers = self.watchers
        if not watchers:
            self._retry = False
            return 0
        claimed: tuple[str, ...] = submit(self._persistence, ClaimWakes(
            host_id=self.host_id, watchers=tuple(sorted(watchers)),
            expires_at=self._clock() + self._lease_ms), timeout=self._timeout)
        self._retry = False
        for watcher in claimed:
            self._wake(watcher)
        return len(claimed)

    def _run(self) -> None:
        renew_every = self._lease_ms / 3000
        next_renew = time.monotonic() + renew_every
        while not self._stop.is_set():
            renewed = False
            try:
                self.probe(min(_WAIT_S, max(0.0, next_renew - time.monotonic())))
                if time.monotonic() >= next_renew:
                    next_renew = time.monotonic() + renew_every
                    self.claim()  # renews the leases, and takes what a dead co-host left
                    renewed = True
            except _PROBE_ERRORS as exc:
                level = logging.DEBUG if self._failing else logging.WARNING
                self._failing = True
                logger.log(level, "the hosting probe failed (retrying): %s: %s",
                           type(exc).__name__, exc)
                self._stop.wait(self._interval_s)
                continue
            except Exception:
                logger.exception("the hosting probe failed (retrying)")
                self._stop.wait(self._interval_s)
                continue
            if self._failing and renewed:  # a write went through, not only a read
                self._failing = False
                logger.info("the hosting probe works again")

    def stop(self, timeout: float) -> int:
        """Stop the hosting thread and close the signal; returns 1 if it was stuck.

        The leases stay in the log until :class:`~persistence.ReleaseLeases`
        drops them (``close`` does) or they lapse.
        """
        self._stop.set()
        thread = self._thread
        stuck = 0
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            stuck = int(thread.is_alive())
        self._signal.close()
        return stuck
