"""The hosting collaborator of :class:`actors.Gateway`: which watchers this process runs.

:class:`HostingApi` owns ``host``, ``unhost``, ``release_leases`` and
``hosted``: the argument checks in front of the engine's
:class:`~actors.engine.hosting.Hosting` (hosting leases and the probe that
delivers wakes addressed to this process) and the early release of this
gateway's scan and hosting leases. ``Gateway`` delegates to it and shows
these docstrings as its own.
"""

from __future__ import annotations

from collections.abc import Callable

from actors.engine.hosting import Hosting
from actors.facade import validate as v

__all__ = ["HostingApi"]


class HostingApi:
    """Hosting watchers and releasing leases, on the request paths it is given.

    Args:
        guard: ``() -> None``, raising ``ReentrantCall`` or ``GatewayClosed``
            when a public call must not run.
        hosting: the engine's hosting leases and wake probe.
        waker: the waker actor, or ``None`` when the gateway has no
            ``on_wake`` (then nothing may be hosted).
        release_leases: ``() -> None``: drop this gateway's scan and hosting
            leases (best effort).

    Thread-safe: it keeps no state.
    """

    def __init__(self, *, guard: Callable[[], None], hosting: Hosting, waker: object | None,
                 release_leases: Callable[[], None]) -> None:
        """Wire the collaborator (non-blocking)."""
        self._guard = guard
        self._hosting = hosting
        self._waker = waker
        self._release_leases = release_leases

    def host(self, *watcher_keys: str) -> None:
        """Declare that these watchers' agent loops run in this process.

        While this gateway is open its ``on_wake`` receives every wake of
        these watchers, whichever process (or thread) caused the notice:
        another process that opens a notice for a hosted watcher addresses
        the wake to the hosts, and this process finds it within about
        ``config.probe_interval_ms`` (plus one commit). Several processes
        may host one watcher; each wake then runs in exactly one of them.
        The lease behind it is renewed every third of ``config.lease_ms``;
        if this process dies it lapses after at most ``lease_ms`` and wakes
        run where they are caused again. Wakes owed to these watchers (ones
        other processes addressed to their hosts that nobody took, and ones a
        host that died or left took while their notice is still open) are
        delivered now, once each. Idempotent.

        Args:
            watcher_keys: agent-qualified watcher session keys.

        Raises:
            InvalidSessionKey, InvalidArgument: a bad key, or no ``on_wake``
                was given to :meth:`open`.
            StorageError: the lease could not be written.

        Blocks on one write (it takes the leases and claims the owed wakes); calling thread.
        """
        self._guard()
        hosted = v.check_hosts(watcher_keys, self._waker)
        if hosted:
            self._hosting.host(hosted)

    def unhost(self, *watcher_keys: str) -> None:
        """Stop hosting these watchers (their wakes run where caused, or at another host).

        Raises:
            InvalidSessionKey: a bad key.
            StorageError: the lease could not be written.
        """
        self._guard()
        for key in watcher_keys:
            v.check_key(key, "watcher_key")
        if watcher_keys:
            self._hosting.unhost(tuple(watcher_keys))

    def release_leases(self) -> None:
        """Drop this gateway's scan and hosting leases now, so other processes take over.

        For a process that is done scanning but not closing yet (``ssa
        hook``, which ends without closing): the leases otherwise stay until
        they lapse (``lease_ms``), and another process skips those links
        meanwhile. A later scan or hosting renewal takes them again. Best
        effort: a failure is logged and the leases lapse by themselves.

        Raises:
            GatewayClosed: the gateway is closed.

        Any thread; blocks on one write.
        """
        self._guard()
        self._release_leases()

    @property
    def hosted(self) -> frozenset[str]:
        """The watchers this process hosts (non-blocking)."""
        return self._hosting.watchers
