"""Base actor: logs unexpected messages and contains host code's ``BaseException``s."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pykka

from persistence.errors import StorageError
from persistence.runtime import Dispatcher, InlineActor, on_our_thread

__all__ = ["GatewayActor", "on_our_thread"]

logger = logging.getLogger(__name__)


def _expected(exc: Exception) -> bool:
    """Storage faults and timeouts are reported by their owners; anything else is a bug."""
    return isinstance(exc, StorageError | pykka.Timeout | pykka.ActorDeadError)


class GatewayActor(InlineActor):
    """Base of the gateway's actors (session, cursor, waker, monitor, late publisher).

    They run on the actor runtime of :mod:`persistence.runtime`: no thread of
    their own, handled by the thread that messages them (or a worker of the
    gateway's dispatcher). Unknown messages become a WARNING instead of an
    error. Subclasses implement :meth:`handle`.

    Args:
        dispatcher: the gateway's dispatcher (``None``: always inline).
    """

    def __init__(self, *, dispatcher: Dispatcher | None = None) -> None:
        super().__init__(dispatcher=dispatcher)

    def on_receive(self, message: Any) -> Any:
        """Dispatch to :meth:`handle` (driving thread).

        A ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``
        or ``SystemExit`` raised by host code such as ``on_wake`` or a node
        reader) is turned into a ``RuntimeError`` for the caller, except a
        ``KeyboardInterrupt`` in the main thread, which is the user's Ctrl-C
        and propagates.
        """
        try:
            return self.handle(message)
        except Exception as exc:
            if not _expected(exc):
                logger.error("%s failed handling %s", type(self).__name__,
                             type(message).__name__, exc_info=True)
            raise
        except BaseException as exc:
            if (isinstance(exc, KeyboardInterrupt)
                    and threading.current_thread() is threading.main_thread()):
                raise
            logger.error("%s caught %s from host code; the actor keeps running",
                         type(self).__name__, type(exc).__name__)
            raise RuntimeError(f"{type(exc).__name__} raised inside {type(self).__name__}") from exc

    def handle(self, message: Any) -> Any:
        """Handle one message; the default logs it as unexpected."""
        logger.warning("%s ignored an unexpected %s", type(self).__name__, type(message).__name__)
        return None
