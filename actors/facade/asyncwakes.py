"""Running an :class:`~actors.AsyncGateway`'s ``on_wake`` on its loop, one key at a time."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["run_wakes"]

logger = logging.getLogger("actors.facade.async_gateway")


async def run_wakes(on_wake: Callable[[str], Any] | None, watcher_keys: list[str]) -> None:
    """Run ``on_wake`` (a plain or coroutine function) for each key in turn.

    One that raises does not stop the others (it is logged; the notice stays
    open and the watcher sees it at its next turn). A ``CancelledError`` raised
    by ``on_wake`` itself is logged too; one that cancels this task (at close)
    stops here. Runs on the gateway's loop.
    """
    if on_wake is None:
        return
    for watcher_key in watcher_keys:
        try:
            outcome = on_wake(watcher_key)
            if inspect.isawaitable(outcome):
                await outcome
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # this task is being cancelled (at close): stop here
            logger.error("on_wake for %s raised CancelledError; the gateway goes on",
                         watcher_key)
        except Exception:  # the notice stays open; the watcher sees it at its next turn
            logger.exception("on_wake for %s raised; the gateway goes on", watcher_key)
