"""The waker actor: the one place that calls the host's ``on_wake``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from actors._base import GatewayActor
from actors._messages import Wake

__all__ = ["WakerActor"]

logger = logging.getLogger(__name__)


class WakerActor(GatewayActor):
    """Calls ``on_wake(watcher_key)`` for main-session watchers (seed, heartbeat wake).

    Host code runs here, in this actor's thread, never inside the persistence
    actor or under a lock (architecture notes, "Wakes and callbacks"). An
    exception from ``on_wake`` is logged and survived.

    Args:
        on_wake: the host's callback; it must not block and must not call back
            into the gateway (such calls raise ``ReentrantCall``).
    """

    use_daemon_thread = True
    """Host code may hang here; a stuck ``on_wake`` must not keep the process alive.
    The waker holds no state, so nothing is lost if the process exits under it."""

    def __init__(self, on_wake: Callable[[str], None]) -> None:
        super().__init__()
        self._on_wake = on_wake

    def handle(self, message: Any) -> Any:
        """Call ``on_wake`` for a :class:`Wake` (actor thread; blocks on host code)."""
        match message:
            case Wake(watcher_key=watcher_key):
                try:
                    self._on_wake(watcher_key)
                except BaseException:  # host code: even SystemExit must not stop our actors
                    logger.exception("on_wake raised; the notice stays queued")
                return None
        return super().handle(message)
