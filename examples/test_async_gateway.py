"""An example test for an asyncio gateway that adopts Codex sessions: copy it into your suite.

Run with the kit's fixtures switched on (``pytest -p actors.testing``); the
``anyio`` marker runs it on an asyncio loop through anyio's pytest plugin,
which is installed with this library.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actors import AsyncGateway
from actors.testing import CodexRollout, ManualClock, Reply, Typed

MANAGER = "agent:main:main"
WORKER = "agent:main:codex:worker"


@pytest.mark.anyio
async def test_a_person_typing_into_an_adopted_codex_thread_reaches_the_manager(
    ssa_async_gateway: AsyncGateway, ssa_clock: ManualClock, tmp_path: Path,
) -> None:
    rollout = CodexRollout(tmp_path / "rollout.jsonl", clock=ssa_clock)
    rollout.append(Typed("the history before adoption"), Reply("done"))
    assert await ssa_async_gateway.adopt(WORKER, source="codex", path=rollout.path) is not None
    assert await ssa_async_gateway.watch(MANAGER, WORKER)

    ssa_clock.advance(60_000)
    rollout.append(Typed("use the staging database, not production"))
    events = await ssa_async_gateway.scan_upstream()
    assert [event.kind for event in events] == ["human_direct_message"]
    [notice] = await ssa_async_gateway.drain(MANAGER)
    assert WORKER in notice
    status = await ssa_async_gateway.session_status(WORKER, changes_since=1)
    assert status.state_changes is not None
    assert [e.kind for e in status.state_changes.events] == ["human_direct_message"]
