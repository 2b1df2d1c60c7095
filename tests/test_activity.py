"""Where a worker stands, from its tool's own hooks (issue 33 item 2).

Rules and the transcript correction are plain functions; the gateway keeps
the state (schema 7); ``ssa hook <tool> --activity`` records it and the turn's
end (log-only ``run_completed``/``run_failed``); ``--permission-wait`` opens
one ``worker_waiting`` notice through the timer.
"""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest

from actors import Gateway
from actors.agents import hook as hook_mod
from actors.agents.activity import ActivityRule, rule_for
from actors.agents.activityrun import record_activity, run_timer
from actors.agents.hookargs import HookArgs
from actors.agents.hookinput import HookInput
from actors.agents.tools import tool_named
from actors.errors import InvalidArgument
from actors.facade.activity import BUSY_SLACK_MS, current_activity
from actors.testing import Reply, Typed
from persistence import WorkerActivity
from tests.test_hook import Home, home  # noqa: F401 - the fixture

KEY = "agent:main:worker"


# --- pure ------------------------------------------------------------------------------

def test_each_tools_rules_name_the_events_and_kinds() -> None:
    claude = tool_named("claude-code")
    assert claude is not None
    rules = claude.activity
    assert rule_for(rules, "Stop", None) == ActivityRule("Stop", "finished", run="ok")
    assert rule_for(rules, "Notification", "permission_prompt") == ActivityRule(
        "Notification:permission_prompt", "waiting", "permission")
    assert rule_for(rules, "Notification", "idle_prompt").detail == "input"  # type: ignore[union-attr]
    assert rule_for(rules, "Notification", "auth_success") is None
    assert rule_for(rules, "StopFailure", None).run == "error"  # type: ignore[union-attr]
    assert rule_for(rules, "UserPromptSubmit", None) is None
    codex = tool_named("codex")
    assert codex is not None
    assert rule_for(codex.activity, "PermissionRequest", None).detail == "permission"  # type: ignore[union-attr]


def test_a_transcript_that_grew_after_a_pause_reads_busy() -> None:
    idle = WorkerActivity(state="idle", since=1_000, updated_at=1_000)
    assert current_activity(idle, None) == idle
    assert current_activity(idle, 1_000 + BUSY_SLACK_MS) == idle  # the turn's last rows
    busy = current_activity(idle, 1_001 + BUSY_SLACK_MS)
    assert busy is not None
    assert (busy.state, busy.since) == ("busy", 1_001 + BUSY_SLACK_MS)
    finished = WorkerActivity(state="finished", since=1_000, updated_at=1_000)
    resumed = current_activity(finished, 99_999)  # prompted again (or resumed)
    assert resumed is not None
    assert resumed.state == "busy"
    busy_now = WorkerActivity(state="busy", since=1_000, updated_at=1_000)
    assert current_activity(busy_now, 99_999) == busy_now
    assert current_activity(None, 5) is None


# --- the gateway -----------------------------------------------------------------------

def test_note_activity_keeps_the_first_since_and_ignores_older_notes(gateway: Gateway) -> None:
    gateway.create_session(KEY)
    assert gateway.activity(KEY) is None
    assert gateway.note_activity(KEY, "waiting", detail="permission", at=1_000)
    assert not gateway.note_activity(KEY, "waiting", detail="permission", at=2_000)
    assert gateway.activity(KEY) == WorkerActivity(state="waiting", detail="permission",
                                                   since=1_000, updated_at=2_000)
    assert not gateway.note_activity(KEY, "idle", at=1_500)  # older than the last note
    assert gateway.note_activity(KEY, "idle", at=3_000)
    status = gateway.session_status(KEY)
    assert status.worker_state == WorkerActivity(state="idle", since=3_000, updated_at=3_000)
    gateway.delete_session(KEY)
    assert gateway.activity(KEY) is None


@pytest.mark.parametrize(("state", "detail"), [
    ("sleeping", None), ("waiting", None), ("waiting", "coffee"), ("failed", None),
    ("busy", "permission")])
def test_bad_states_are_refused(gateway: Gateway, state: str, detail: str | None) -> None:
    with pytest.raises(InvalidArgument):
        gateway.note_activity(KEY, state, detail=detail)


# --- ssa hook --activity ---------------------------------------------------------------

def _worker_input(h: Home, event: str, **extra: object) -> bytes:
    return json.dumps({"session_id": h.worker.thread_id, "cwd": str(h.project),
                       "hook_event_name": event, **extra}).encode()


def _activity_hook(h: Home, event: str, *args: str, **extra: object) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert hook_mod.main(["codex", "--activity", "--timeout", "0", *args],
                         stdin=io.BytesIO(_worker_input(h, event, **extra)),
                         stdout=out, stderr=err) == 0
    assert err.getvalue() == ""
    return out.getvalue()


def _worker_key(h: Home) -> str:
    return f"agent:main:codex:{h.worker.thread_id}"


def _events(h: Home) -> list[str]:
    with Gateway.open(str(h.db), monitor=False) as gw:
        changes = gw.session_status(_worker_key(h), changes_since=0).state_changes
        assert changes is not None
        return [e.kind for e in changes.events]


def _activity(h: Home) -> WorkerActivity | None:
    with Gateway.open(str(h.db), monitor=False) as gw:
        return gw.activity(_worker_key(h))


def test_a_workers_turn_end_is_logged_and_shown_without_a_notice(home: Home) -> None:  # noqa: F811 - the fixture
    assert home.context() == ""  # the manager adopts and watches the worker
    assert _activity_hook(home, "Stop", turn_id="turn-1") == ""
    assert _events(home)[-1] == "run_completed"
    found = _activity(home)
    assert found is not None
    assert found.state == "finished"
    assert home.context() == ""  # log only: the manager is not told
    _activity_hook(home, "Stop", turn_id="turn-1")  # the same turn again: one event
    assert _events(home).count("run_completed") == 1


def test_a_permission_wait_shows_as_waiting_then_busy_once_answered(home: Home) -> None:  # noqa: F811 - the fixture
    home.context()
    _activity_hook(home, "PermissionRequest", turn_id="turn-2")
    found = _activity(home)
    assert found is not None
    assert (found.state, found.detail) == ("waiting", "permission")
    # Answered: the tool writes on, later than the slack.
    home.worker.append(Reply("ran the command"))
    later = (found.updated_at + BUSY_SLACK_MS + 1_000) / 1000
    import os
    os.utime(home.worker.path, (later, later))
    busy = _activity(home)
    assert busy is not None
    assert busy.state == "busy"


def test_a_session_is_recorded_only_when_the_log_knows_it_or_has_a_manager(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    Gateway.open(str(db), monitor=False).close()
    raw = json.dumps({"session_id": "nobody", "cwd": str(tmp_path),
                      "hook_event_name": "Stop"}).encode()
    assert record_activity(HookArgs(tool="codex", db=str(db), activity=True), raw) is None
    assert record_activity(HookArgs(tool="codex", db=str(tmp_path / "none.sqlite"),
                                    activity=True), raw) is None
    assert not (tmp_path / "none.sqlite").exists()
    # With a manager, a worker's first turn (which often ends before its manager adopts
    # it) is recorded all the same.
    with Gateway.open(str(db), monitor=False) as gw:
        gw.set_role("agent:main:boss", "manager")
    assert record_activity(HookArgs(tool="codex", db=str(db), activity=True), raw) == "finished"
    with Gateway.open(str(db), monitor=False) as gw:
        found = gw.activity("agent:main:codex:nobody")
        assert found is not None
        assert found.state == "finished"
        changes = gw.session_status("agent:main:codex:nobody", changes_since=0).state_changes
        assert changes is not None
        assert [e.kind for e in changes.events] == ["run_completed"]


def test_a_long_permission_wait_opens_one_notice_when_opted_in(home: Home) -> None:  # noqa: F811 - the fixture
    home.context()
    started: list[int] = []

    def spawn(args: HookArgs, hook: HookInput, since: int) -> None:
        started.append(since)

    raw = _worker_input(home, "PermissionRequest")
    args = HookArgs(tool="codex", db=str(home.db), activity=True, permission_wait=5.0)
    assert record_activity(args, raw, spawn=spawn) == "waiting"
    assert len(started) == 1
    slept: list[float] = []
    timer = args.replace(activity=False, activity_timer=started[0])
    assert run_timer(timer, raw, sleep=slept.append)
    assert slept == [300.0]
    text = home.context()
    assert "worker_waiting by system" in text
    assert "waiting for a permission answer" in text
    assert "now waiting for permission since " in text  # where it stands, in the summary
    assert not run_timer(timer, raw, sleep=slept.append)  # the same wait: deduplicated
    assert home.context() == ""


def test_no_timer_without_the_opt_in_and_none_after_the_answer(home: Home) -> None:  # noqa: F811 - the fixture
    home.context()
    started: list[int] = []
    raw = _worker_input(home, "PermissionRequest")
    args = HookArgs(tool="codex", db=str(home.db), activity=True)
    record_activity(args, raw, spawn=lambda a, h, since: started.append(since))
    assert started == []  # not opted in
    record_activity(args.replace(permission_wait=1.0), raw,
                    spawn=lambda a, h, since: started.append(since))
    home.worker.append(Typed("approved"), Reply("ok"))  # answered: the tool writes on
    found = _activity(home)
    assert found is not None
    later = (found.updated_at + BUSY_SLACK_MS + 1_000) / 1000
    import os
    os.utime(home.worker.path, (later, later))
    timer = args.replace(activity=False, activity_timer=started[-1], permission_wait=1.0)
    assert not run_timer(timer, raw, sleep=lambda s: None)


def test_a_second_permission_wait_in_a_turn_gets_its_own_notice(home: Home) -> None:  # noqa: F811 - the fixture
    """Adversary round 4 (finding 07): the first wait of a turn was told; the person
    answered, the next tool's prompt waited past the limit, and that wait (the one the
    worker is stuck on) kept the first one's start, so its timer gave up."""
    home.context()
    base = int(time.time() * 1000) - 60_000
    os.utime(home.worker.path, ((base - 1_000) / 1000,) * 2)  # written before the wait
    starts: list[int] = []
    raw = _worker_input(home, "PermissionRequest")
    args = HookArgs(tool="codex", db=str(home.db), activity=True, permission_wait=1.0)
    assert record_activity(args, raw, spawn=lambda a, h, since: starts.append(since),
                           clock=lambda: base) == "waiting"
    first = args.replace(activity=False, activity_timer=starts[0])
    assert run_timer(first, raw, sleep=lambda s: None)
    assert "worker_waiting by system" in home.context()
    home.worker.append(Reply("ran it"))  # answered: the tool went on, 10 s later
    os.utime(home.worker.path, ((base + 10_000) / 1000,) * 2)
    assert record_activity(args, raw, spawn=lambda a, h, since: starts.append(since),
                           clock=lambda: base + 20_000) == "waiting"
    found = _activity(home)
    assert found is not None
    assert found.since == starts[1] == base + 20_000  # a new wait, from then
    second = args.replace(activity=False, activity_timer=starts[1])
    assert run_timer(second, raw, sleep=lambda s: None)
    assert "worker_waiting by system" in home.context()
