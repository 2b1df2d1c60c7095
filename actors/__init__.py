"""Session state awareness for multi-agent gateways.

The public API is the thread-safe :class:`Gateway` (``api-contract.md``), and
:class:`AsyncGateway`, its asyncio face with the same methods as coroutines:
producers record typed events into a durable signal log, watchers get one
notice per watcher/target pair however many changes land, and
``session_status(changes_since=N)`` reconciles cheaply.

Internally each session, each watcher cursor, each upstream monitor and the
single SQLite writer run as Pykka actors exchanging frozen msgspec messages,
on a runtime that gives them no thread of their own (``persistence._runtime``);
no Pykka type leaks through the public API.
"""

from __future__ import annotations

import logging

from actors._async import AsyncGateway
from actors._config import GatewayConfig
from actors._types import (
    SendResult,
    SessionRow,
    SessionStateEvent,
    SessionStateEventInput,
    SessionStatus,
    StateChanges,
    UpstreamLink,
)
from actors._upstream import AdoptRequest
from actors.gateway import Gateway, default_state_path

__all__ = [
    "AdoptRequest",
    "AsyncGateway",
    "Gateway",
    "GatewayConfig",
    "SendResult",
    "SessionRow",
    "SessionStateEvent",
    "SessionStateEventInput",
    "SessionStatus",
    "StateChanges",
    "UpstreamLink",
    "default_state_path",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())
