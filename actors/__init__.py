"""Session state awareness for multi-agent gateways.

The public API is the thread-safe :class:`Gateway` (``api-contract.md``), and
:class:`AsyncGateway`, its asyncio face with the same methods as coroutines:
producers record typed events into a durable signal log, watchers get one
notice per watcher/target pair however many changes land, and
``session_status(changes_since=N)`` reconciles cheaply.

Internally each session, each watcher cursor, each upstream monitor and the
single SQLite writer run as Pykka actors exchanging frozen msgspec messages,
on a runtime that gives them no thread of their own (``persistence.runtime``);
no Pykka type leaks through the public API.
"""

from __future__ import annotations

from persistence.lazylog import lazy_export

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import Any

    from actors.config import GatewayConfig
    from actors.facade.async_gateway import AsyncGateway
    from actors.facade.gateway import Gateway, default_state_path
    from actors.facade.values import (
        SendResult,
        SessionRow,
        SessionStateEvent,
        SessionStateEventInput,
        SessionStatus,
        StateChanges,
        UpstreamLink,
    )
    from actors.monitors.adoption import AdoptRequest

_EXPORTS: dict[str, str] = {
    "AdoptRequest": "actors.monitors.adoption",
    "AsyncGateway": "actors.facade.async_gateway",
    "Gateway": "actors.facade.gateway",
    "GatewayConfig": "actors.config",
    "SendResult": "actors.facade.values",
    "SessionRow": "actors.facade.values",
    "SessionStateEvent": "actors.facade.values",
    "SessionStateEventInput": "actors.facade.values",
    "SessionStatus": "actors.facade.values",
    "StateChanges": "actors.facade.values",
    "UpstreamLink": "actors.facade.values",
    "default_state_path": "persistence.locations",
}
"""Where each public name lives: imported on first use (PEP 562), so a light
command such as ``ssa hook`` pays only for the modules it touches."""


def __getattr__(name: str) -> Any:
    """Import ``name`` from its module on first use (any thread; blocks on the import).

    Raises:
        AttributeError: ``name`` is not a public name of this package.
    """
    return lazy_export(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    """The public names (``__all__``) and the module's own attributes."""
    return sorted(set(globals()) | set(__all__))

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

