"""The waker actor: the one place that calls the host's ``on_wake``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from actors.engine.base import GatewayActor
from actors.engine.messages import Wake
from persistence.runtime import Dispatcher

__all__ = ["WakerActor"]

logger = logging.getLogger(__name__)


class WakerActor(GatewayActor):
    """Calls ``on_wake(watcher_key)`` for main-session watchers (seed, heartbeat wake).

    Host code runs here and only here, one call at a time, never inside the
    persistence actor or under a lock (architecture notes, "Wakes and
    callbacks"). The actor has no thread of its own: ``on_wake`` runs in the
    thread whose call queued the notice (a producer, a drain, a scan worker),
    which is what lets a producer return after its wake without a thread
    hop. An exception from ``on_wake`` is logged and survived.

    Args:
        on_wake: the host's callback; it must not block (it delays the call
            that caused it) and must not call back into the gateway (such
            calls raise ``ReentrantCall``).
        dispatcher: the gateway's dispatcher (see :mod:`persistence.runtime`).
    """

    def __init__(self, on_wake: Callable[[str], None], *,
                 dispatcher: Dispatcher | None = None) -> None:
        super().__init__(dispatcher=dispatcher)
        self._on_wake = on_wake

    def handle(self, message: Any) -> Any:
        """Call ``on_wake`` for a :class:`Wake` (driving thread; blocks on host code)."""
        match message:
            case Wake(watcher_key=watcher_key):
                try:
                    self._on_wake(watcher_key)
                except KeyboardInterrupt:
                    if threading.current_thread() is threading.main_thread():
                        raise  # the user's Ctrl-C, in the thread that ran on_wake
                    logger.exception("on_wake raised; the notice stays queued")
                except BaseException:  # host code: even SystemExit must not stop our actors
                    logger.exception("on_wake raised; the notice stays queued")
                # Wakes queued meanwhile (other callers') go to a free worker, so
                # this caller returns after its own wake, not after everyone's.
                self.runtime_yield = True
                return None
        return super().handle(message)
