"""How a session entry shapes record commands (pure; anchor §3.6, §3.12)."""

from __future__ import annotations

from persistence import EntryRow, RecordEvent
from persistence.shaping import shape_record

GROUP = "agent:main:telegram:group:room-1"


def _human(key: str, shape: str = "human-per-group") -> RecordEvent:
    return RecordEvent(session_key=key, agent_id="main", kind="human_direct_message",
                       actor_type="human", summary="human message via test",
                       shape=shape)  # type: ignore[arg-type]


def test_an_unparented_human_turn_records_only_when_watched() -> None:
    shaped = shape_record(_human("agent:main:worker"), None)
    assert shaped.only_if_watched is True
    assert shaped.watcher_keys == ()
    assert shaped.ambient_watcher is None


def test_a_parented_human_turn_always_records_and_tells_the_parent() -> None:
    entry = EntryRow(session_key="agent:main:subagent:c", agent_id="main",
                     spawned_by="agent:main:main", session_id="s-7")
    shaped = shape_record(_human("agent:main:subagent:c"), entry)
    assert shaped.only_if_watched is False
    assert shaped.watcher_keys == ("agent:main:main",)
    assert shaped.session_id == "s-7"


def test_a_group_turn_under_per_group_makes_main_an_ambient_watcher() -> None:
    assert shape_record(_human(GROUP), None).ambient_watcher == "agent:main:main"
    by_type = EntryRow(session_key="agent:main:room", agent_id="main", chat_type="channel")
    assert shape_record(_human("agent:main:room"), by_type).ambient_watcher == "agent:main:main"
    assert shape_record(_human(GROUP, "human"), None).ambient_watcher is None


def test_a_group_routed_into_main_is_not_watched() -> None:
    entry = EntryRow(session_key="agent:main:main", agent_id="main", chat_type="group")
    assert shape_record(_human("agent:main:main"), entry).ambient_watcher is None


def test_entry_watchers_adds_only_an_agent_qualified_parent() -> None:
    goal = RecordEvent(session_key="agent:main:x", agent_id="main", kind="goal_changed",
                       actor_type="human", summary="goal set", shape="entry-watchers")
    parented = EntryRow(session_key="agent:main:x", agent_id="main", spawned_by="agent:main:p")
    assert shape_record(goal, parented).watcher_keys == ("agent:main:p",)
    bare = EntryRow(session_key="agent:main:x", agent_id="main", spawned_by="global")
    assert shape_record(goal, bare).watcher_keys == ()
    plain = RecordEvent(session_key="agent:main:x", agent_id="main", kind="compacted",
                        actor_type="system", summary="session compacted")
    assert shape_record(plain, parented) == plain
