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

    Thread-safe; :meth:`get` blocks only while a new actor thread starts.
    """

    def __init__(
        self, factory: Callable[[K], pykka.ActorRef[Any]], *, cap: int | None = None,
        name: str = "actor",
    ) -> None:
        self._factory = factory
        self._cap = cap
        self._name = name
        self._lock = threading.Lock()
        self._live: OrderedDict[K, pykka.ActorRef[Any]] = OrderedDict()
        self._retiring: list[pykka.ActorRef[Any]] = []
        self._closed = False

    def get(self, key: K) -> pykka.ActorRef[Any]:
        """Return the live actor for ``key``, starting it if needed.

        Raises:
            GatewayClosed: the pool was stopped.
        """
        with self._lock:
            if self._closed:
                raise GatewayClosed("the gateway is closed")
            ref = self._live.get(key)
            if ref is not None and ref.is_alive():
                self._live.move_to_end(key)
                return ref
            ref = self._factory(key)
            self._live[key] = ref
            if self._cap is not None:
                while len(self._live) > self._cap:
                    _, old = self._live.popitem(last=False)
                    self._retire(old)
            return ref

    def discard_where(self, predicate: Callable[[K], bool]) -> int:
        """Stop (without waiting) every actor whose key matches; returns how many."""
        with self._lock:
            keys = [k for k in self._live if predicate(k)]
            for key in keys:
                self._retire(self._live.pop(key))
            return len(keys)

    def __len__(self) -> int:
        with self._lock:
            return len(self._live)

    def _retire(self, ref: pykka.ActorRef[Any]) -> None:
        self._retiring = [r for r in self._retiring if r.is_alive()]
        self._retiring.append(ref)
        with contextlib.suppress(pykka.ActorDeadError):
            ref.stop(block=False)

    def stop_all(self, timeout: float) -> int:
        """Stop every actor, newest first, waiting up to ``timeout`` s for each.

        Returns:
            How many actors were still alive afterwards (each logged at ERROR).
        """
        with self._lock:
            self._closed = True
            refs = [*reversed(self._live.values()), *self._retiring]
            self._live.clear()
            self._retiring = []
        stuck = 0
        for ref in refs:
            try:
                ref.stop(block=True, timeout=timeout)
            except pykka.Timeout:
                stuck += 1
                logger.error("a %s actor did not stop within %.1fs", self._name, timeout)
        return stuck
