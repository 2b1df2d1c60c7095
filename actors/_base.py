"""Base actor: marks our threads and logs unexpected messages."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pykka

__all__ = ["GatewayActor", "on_our_thread"]

logger = logging.getLogger(__name__)

_local = threading.local()


def _expected(exc: Exception) -> bool:
    """Storage faults and timeouts are reported by their owners; anything else is a bug."""
    from persistence.errors import StorageError  # noqa: PLC0415

    return isinstance(exc, StorageError | pykka.Timeout | pykka.ActorDeadError)


def on_our_thread() -> bool:
    """Whether the calling thread is one of the gateway's actor threads."""
    return bool(getattr(_local, "ours", False))


class GatewayActor(pykka.ThreadingActor):
    """Base of the gateway's actors.

    Marks its thread so the facade can refuse blocking calls made from it
    (style anchors §7.3 rule 27), and turns unknown messages into a WARNING
    instead of an error. Subclasses implement :meth:`handle`.
    """

    def on_start(self) -> None:
        """Mark the actor thread as ours (actor thread, non-blocking)."""
        _local.ours = True

    def on_receive(self, message: Any) -> Any:
        """Dispatch to :meth:`handle` (actor thread).

        A ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``
        or ``SystemExit`` raised by host code such as ``on_wake`` or a node
        reader) is turned into a ``RuntimeError`` for the caller: Pykka would
        otherwise stop every actor in the process, the host's included.
        """
        try:
            return self.handle(message)
        except Exception as exc:
            if not _expected(exc):
                logger.error("%s failed handling %s", type(self).__name__,
                             type(message).__name__, exc_info=True)
            raise
        except BaseException as exc:
            logger.error("%s caught %s from host code; the actor keeps running",
                         type(self).__name__, type(exc).__name__)
            raise RuntimeError(f"{type(exc).__name__} raised inside {type(self).__name__}") from exc

    def handle(self, message: Any) -> Any:
        """Handle one message; the default logs it as unexpected."""
        logger.warning("%s ignored an unexpected %s", type(self).__name__, type(message).__name__)
        return None
