"""An example test for a gateway that adopts Claude Code sessions: copy it into your suite.

Run with the kit's fixtures switched on: ``pytest -p actors.testing``
(or ``addopts = "-p actors.testing"`` in your pytest configuration).
"""

from __future__ import annotations

from pathlib import Path

from actors import Gateway
from actors.testing import ClaudeCodeTranscript, ManualClock, Reply, SlashCommand, Typed

MANAGER = "agent:main:main"
WORKER = "agent:main:claude:worker"


def test_a_person_typing_into_the_adopted_session_notifies_the_manager_once(
    ssa_gateway: Gateway, ssa_clock: ManualClock, tmp_path: Path,
) -> None:
    session = ClaudeCodeTranscript(tmp_path / "worker.jsonl", clock=ssa_clock)
    session.append(Typed("the history before adoption"), Reply("done"))
    assert ssa_gateway.adopt(WORKER, source="claude", path=session.path) is not None
    assert ssa_gateway.watch(MANAGER, WORKER)

    session.append(SlashCommand("model"), Reply("model set"))  # no person's prompt here
    assert ssa_gateway.scan_upstream() == []

    ssa_clock.advance(60_000)
    session.append(Typed("actually, stop and run the tests first"), Typed("and lint"))
    events = ssa_gateway.scan_upstream()
    assert [event.kind for event in events] == ["human_direct_message"]
    notices = ssa_gateway.drain(MANAGER)
    assert len(notices) == 1  # two turns, one notice
    status = ssa_gateway.session_status(WORKER, changes_since=1)
    assert status.state_changes is not None
    assert [e.kind for e in status.state_changes.events] == ["human_direct_message"]
