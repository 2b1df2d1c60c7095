"""The gateway's own registry of the actors it starts (never Pykka's global one)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import pykka

from actors.errors import GatewayClosed

__all__ = ["ActorPool"]

logger = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class ActorPool(Generic[K]):
    """Actors keyed by identity, started on first use.

    With ``cap``, the least recently used actors beyond it are stopped; such
    actors only cache durable state, so the next :meth:`get` restarts them
    from SQLite (architecture notes, "Restart and passivation"). A caller
    racing an eviction sees ``pykka.ActorDeadError`` and calls :meth:`get`
    again.

    Args:
        factory: starts the actor for a key (called under the pool's lock).
        cap: most live actors, or ``None`` for no limit.
        name: used in log lines.
        join_timeout: seconds :meth:`get` waits for a stopping predecessor of
            the same key to finish before starting its successor.
        on_retire: called (under the pool's lock; must not block) with each
            key whose actor is being stopped.

    Thread-safe; :meth:`get` blocks only while a predecessor of the same key
    finishes stopping.
    """

    def __init__(
        self, factory: Callable[[K], pykka.ActorRef[Any]], *, cap: int | None = None,
        name: str = "actor", join_timeout: float = 10.0,
        on_retire: Callable[[K], None] | None = None,
    ) -> None:
        self._factory = factory
        self._on_retire = on_retire
        self._join_timeout = join_timeout
        self._cap = cap
        self._name = name
        self._lock = threading.Lock()
        self._live: OrderedDict[K, pykka.ActorRef[Any]] = OrderedDict()
        self._retiring: dict[K, pykka.ActorRef[Any]] = {}
        self._closed = False

    def get(self, key: K) -> pykka.ActorRef[Any]:
        """Return the live actor for ``key``, starting it if needed.

        Runs in the caller's thread. Starting an actor costs no thread (see
        :mod:`persistence.runtime`); evicted actors are stopped after the pool's
        lock is released, in this thread.

        Raises:
            GatewayClosed: the pool was stopped.
        """
        with self._lock:
            ref = self._live_ref(key)
            if ref is not None:
                return ref
            retired = self._retiring.pop(key, None)
        if retired is not None:
            # Its on_stop must finish (leaving its state) before a successor starts.
            with contextlib.suppress(pykka.Timeout):
                retired.stop(block=True, timeout=self._join_timeout)
        with self._lock:
            ref = self._live_ref(key)
            if ref is not None:
                return ref
            ref = self._factory(key)
            self._live[key] = ref
            evicted: list[pykka.ActorRef[Any]] = []
            if self._cap is not None:
                while len(self._live) > self._cap:
                    old_key, old = self._live.popitem(last=False)
                    self._mark_retiring(old_key, old)
                    evicted.append(old)
        for old in evicted:
            self._stop_quietly(old)
        return ref

    def _live_ref(self, key: K) -> pykka.ActorRef[Any] | None:
        if self._closed:
            raise GatewayClosed("the gateway is closed")
        ref = self._live.get(key)
        if ref is not None and ref.is_alive():
            self._live.move_to_end(key)
            return ref
        return None

    def peek(self, key: K) -> pykka.ActorRef[Any] | None:
        """Return the live actor for ``key`` without starting one."""
        with self._lock:
            ref = self._live.get(key)
            return ref if ref is not None and ref.is_alive() else None

    def discard_where(self, predicate: Callable[[K], bool], *, wait: bool = False) -> int:
        """Stop every actor whose key matches; returns how many.

        With ``wait`` the call blocks until each has stopped (its ``on_stop``
        ran), at most the join timeout each.
        """
        with self._lock:
            keys = [k for k in self._live if predicate(k)]
            refs = [self._live.pop(key) for key in keys]
            for key, ref in zip(keys, refs, strict=True):
                self._mark_retiring(key, ref)
        for ref in refs:
            self._stop_quietly(ref)
        if wait:
            for ref in refs:
                with contextlib.suppress(pykka.Timeout):
                    ref.stop(block=True, timeout=self._join_timeout)
        return len(keys)

    def __len__(self) -> int:
        with self._lock:
            return len(self._live)

    def _mark_retiring(self, key: K, ref: pykka.ActorRef[Any]) -> None:
        # Under the lock: announce the retirement (hand-over) before the stop.
        if self._on_retire is not None:
            self._on_retire(key)
        if len(self._retiring) > 64:
            self._retiring = {k: r for k, r in self._retiring.items() if r.is_alive()}
        self._retiring[key] = ref

    @staticmethod
    def _stop_quietly(ref: pykka.ActorRef[Any]) -> None:
        # Not under the lock: an idle actor's stop runs here, inline.
        with contextlib.suppress(pykka.ActorDeadError):
            ref.stop(block=False)

    def stop_all(self, timeout: float) -> int:
        """Stop every actor, newest first, waiting up to ``timeout`` s for each.

        Returns:
            How many actors were still alive afterwards (each logged at ERROR).
        """
        with self._lock:
            self._closed = True
            refs = [*reversed(self._live.values()), *self._retiring.values()]
            self._live.clear()
            self._retiring = {}
        stuck = 0
        for ref in refs:
            try:
                ref.stop(block=True, timeout=timeout)
            except pykka.Timeout:
                stuck += 1
                logger.error("a %s actor did not stop within %.1fs", self._name, timeout)
        return stuck
