"""Event times never go backwards along one session's state versions.

``adopted #2`` carried a later time than ``human_direct_message #3``: the prompt hook
adopts a session after the person pressed Enter and before the tool writes the row,
whose time (the transcript's, the moment of typing) is then older than the adoption.
An event is now never dated before the state it changes: an earlier time is lifted to
the session's previous event time.
"""

from __future__ import annotations

from pathlib import Path

from actors import Gateway
from actors.facade.values import SessionStateEventInput
from actors.testing import ClaudeCodeTranscript, ManualClock, Reply, Typed

WORKER = "agent:main:claude:worker"
WATCHER = "agent:main:main"


def _times(gw: Gateway, key: str) -> list[tuple[int, str, int]]:
    status = gw.session_status(key, changes_since=0)
    assert status.state_changes is not None
    return [(e.sequence, e.kind, e.occurred_at) for e in status.state_changes.events]


def test_a_turn_stamped_before_the_adoption_is_dated_at_it(tmp_path: Path) -> None:
    typed_at = ManualClock()
    gateway_clock = ManualClock(typed_at.now + 10_000)  # the hook adopts 10 s later
    session = ClaudeCodeTranscript(tmp_path / "worker.jsonl", clock=typed_at)
    session.append(Typed("the history before adoption"), Reply("done"))
    with Gateway.open(tmp_path / "state.sqlite", clock=gateway_clock, monitor=False) as gw:
        assert gw.adopt(WORKER, source="claude", path=session.path) is not None
        assert gw.watch(WATCHER, WORKER)
        typed_at.advance(5_000)  # typed before the adoption, written after it
        session.append(Typed("stop and run the tests"))
        assert [e.kind for e in gw.scan_upstream()] == ["human_direct_message"]
        times = _times(gw, WORKER)
    kinds = [kind for _, kind, _ in times]
    assert kinds[-2:] == ["adopted", "human_direct_message"]
    assert [at for _, _, at in times] == sorted(at for _, _, at in times)
    assert times[-1][2] == times[-2][2] == gateway_clock.now


def test_an_explicit_earlier_time_is_lifted_to_the_previous_event(tmp_path: Path) -> None:
    clock = ManualClock()
    with Gateway.open(tmp_path / "state.sqlite", clock=clock, monitor=False) as gw:
        gw.watch(WATCHER, "agent:main:w")
        first = gw.human_message("agent:main:w", channel="tui")
        assert first is not None
        clock.advance(60_000)
        late = gw.record(SessionStateEventInput(
            session_key="agent:main:w", kind="goal_changed", actor_type="human",
            summary="goal set", occurred_at=first.occurred_at - 30_000))
        assert late is not None
        assert late.occurred_at == first.occurred_at  # lifted, not 30 s before it
        now = gw.human_message("agent:main:w", channel="tui")
        assert now is not None
        assert now.occurred_at == clock.now  # a time after the previous one is kept
        assert [at for _, _, at in _times(gw, "agent:main:w")] == [
            first.occurred_at, first.occurred_at, clock.now]
