"""The wakes of commands that committed after their caller gave up.

Their notices need nothing: they are durable open cursors, shown by every
process as soon as the commit lands. Only the wakes this process owes are run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import msgspec
import pykka

from actors.engine.base import GatewayActor
from persistence import AckOutcome, NoticeDescriptor, RecordOutcome, ScanOutcome, SweepOutcome
from persistence.runtime import Dispatcher, scheduling

__all__ = ["LatePublish", "LatePublisher", "late_sink"]

logger = logging.getLogger(__name__)


class LatePublish(msgspec.Struct, frozen=True, kw_only=True, tag="late.publish"):
    """Notices of a command whose requester timed out before it committed."""

    notices: tuple[NoticeDescriptor, ...]


def _notices_of(value: Any) -> tuple[NoticeDescriptor, ...]:
    match value:
        case RecordOutcome() | AckOutcome() | SweepOutcome():
            return value.notices
        case ScanOutcome(record=RecordOutcome() as record):
            return record.notices
    return ()


def late_sink(ref: pykka.ActorRef[Any]) -> Callable[[Any], None]:
    """An ``on_late`` callback for ``persistence.submit`` that forwards notices to ``ref``.

    It runs in the thread that committed the batch and only ``tell``s, onto
    the dispatcher (never inline, so it never delays that commit).
    """
    def forward(value: Any) -> None:
        notices = _notices_of(value)
        if notices:
            try:
                with scheduling():
                    ref.tell(LatePublish(notices=notices))
            except pykka.ActorDeadError:
                logger.debug("a late commit's notices were dropped: the gateway is closing")
    return forward


class LatePublisher(GatewayActor):
    """Runs the wakes of late commits, so none is lost with the caller that gave up.

    Args:
        publish: the gateway's wake runner (asks the waker; no actor asks
            this one, so the ask graph stays acyclic).
    """

    def __init__(self, publish: Callable[[Iterable[NoticeDescriptor]], None], *,
                 dispatcher: Dispatcher | None = None) -> None:
        super().__init__(dispatcher=dispatcher)
        self._publish = publish

    def handle(self, message: Any) -> Any:
        """Run the wakes (driving thread; blocks on the waker)."""
        match message:
            case LatePublish(notices=notices):
                logger.info("publishing %d notices of a change that committed late",
                            len(notices))
                self._publish(notices)
                return None
        return super().handle(message)
