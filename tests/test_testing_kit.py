"""The test kit (actors.testing): the clock, the builders, the pytest plugin, the example."""

from __future__ import annotations

import json
import shutil
import threading
from collections import Counter
from pathlib import Path

import apsw
import pytest

from actors import Gateway
from actors.errors import GatewayClosed
from actors.testing import (
    DEFAULT_START_MS,
    ClaudeCodeTranscript,
    CodexRollout,
    Compaction,
    ImageOnly,
    Interrupt,
    LeakCheck,
    ManualClock,
    OpenCodeTranscript,
    PiSession,
    Reply,
    SlashCommand,
    SubagentRow,
    ToolCall,
    ToolResult,
    Typed,
)
from actors.upstream.classify import classify_units
from tests.conftest import FIXTURES, needs_fixtures

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parent.parent


def test_the_manual_clock_moves_only_when_told() -> None:
    clock = ManualClock()
    assert clock() == clock.now == DEFAULT_START_MS
    assert clock.advance(1500) == DEFAULT_START_MS + 1500
    clock.set(5)
    assert clock() == 5
    with pytest.raises(ValueError, match="set"):
        clock.advance(-1)
    with pytest.raises(TypeError, match="int"):
        clock.advance(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="int"):
        ManualClock(True)
    assert repr(ManualClock(7)) == "ManualClock(7)"


def test_the_leak_check_names_a_thread_left_running() -> None:
    check = LeakCheck(timeout=0.05)
    release = threading.Event()
    thread = threading.Thread(target=release.wait, args=(5.0,), name="left-behind")
    thread.start()
    try:
        assert check.check() == ["thread left running: left-behind"]
    finally:
        release.set()
        thread.join(5.0)
    assert check.check() == []


ALL_TURNS = (Typed("a person's prompt"), Reply("the answer"),
             ToolCall("Bash", {"command": "ls"}, "toolu_01"), ToolResult("toolu_01", "a.py"),
             SlashCommand("model", "opus"), Interrupt(), Compaction("what happened so far"),
             SubagentRow("a sub-agent's prompt"), ImageOnly(2), SlashCommand("review"),
             SlashCommand("skill:lint"), SlashCommand("skill:lint", "only the tests"))
BUILDERS = {"claude": ClaudeCodeTranscript, "codex": CodexRollout, "pi": PiSession}
EXPECTED = {  # what the tool writes for ALL_TURNS, as the monitor decides it, row by row
    "claude": ["typed", "not_user", "not_user", "tool_result", "meta", "command",
               "command_output", "interrupted", "not_user", "compact_summary", "sidechain",
               "image_only", "meta", "command", "command_output", "meta", "command",
               "command_output", "meta", "command", "command_output"],
    "codex": ["session_meta", "response_item_duplicate", "typed", "response_item", "event",
              "response_item", "response_item", "event", "compacted", "event",
              "injected_context", "response_item_duplicate", "image_only", "event",
              "review_request", "event"],
    "pi": ["header", "typed", "assistant", "assistant", "tool_result", "model_change",
           "assistant", "compaction", "custom_entry", "image_only", "skill_command", "typed"],
}
# Reasons the builders write that no real fixture row has (so no side-by-side row).
UNSEEN = {"claude": {"sidechain", "image_only"},
          "codex": {"compacted", "image_only", "review_request"},
          "pi": {"image_only", "skill_command"}}
FIXTURE_DIRS = {"claude": "claude-code", "codex": "codex", "pi": "pi"}


@pytest.mark.parametrize("source", sorted(BUILDERS))
def test_builder_rows_are_decided_as_the_tool_writes_them(source: str, tmp_path: Path) -> None:
    session = BUILDERS[source](tmp_path / "s.jsonl")
    assert session.append(*ALL_TURNS) == len(EXPECTED[source])
    decided = list(classify_units(source, str(session.path)))
    assert [row["reason"] for row in decided] == EXPECTED[source]
    typed = [row["human"] for row in decided if row["reason"] == "typed"]
    assert typed
    assert all(typed)
    assert not any(row["human"] for row in decided if row["reason"] != "typed")
    stamps = [json.loads(line).get("timestamp") for line in session.path.read_text().splitlines()]
    assert stamps == sorted(stamps)  # the builder's own clock moves on per row
    assert session.append() == 0  # nothing to write: no header twice either
    with pytest.raises(TypeError, match="not a turn"):
        session.append("typed")  # type: ignore[arg-type]


@needs_fixtures
@pytest.mark.parametrize("source", sorted(BUILDERS))
def test_builder_rows_and_real_rows_of_the_same_shape_are_decided_alike(
    source: str, tmp_path: Path,
) -> None:
    """Through ``ssa classify``'s code path: every reason the builder writes that the real
    transcripts of the tool hold (their own decisions, also in files that get no link) is
    the same decision, and the rest are listed."""
    real: Counter[str] = Counter()
    for path in sorted((FIXTURES / FIXTURE_DIRS[source]).glob("*.jsonl")):
        for row in classify_units(source, str(path)):
            reason = row["reason"]
            if reason.startswith("not_monitored: "):
                reason = reason.rsplit("(", 1)[1].rstrip(")")
            real[reason] += 1
    session = BUILDERS[source](tmp_path / "s.jsonl")
    session.append(*ALL_TURNS)
    built = {row["reason"] for row in classify_units(source, str(session.path))}
    assert "typed" in built & set(real)
    assert built - set(real) == UNSEEN[source]


OPENCODE_EXPECTED = [  # ALL_TURNS in the session itself, message by message
    "typed", "not_user", "not_user", "not_user", "compaction", "not_user", "not_user",
    "image_only", "subtask", "not_user", "synthetic", "subtask", "not_user", "synthetic",
    "subtask", "not_user", "synthetic"]
OPENCODE_UNSEEN = {"compaction"}  # no real store holds a /compact
OPENCODE_FIXTURES = ("opencode-1.18.33-generated.db", "opencode-1.1.65-storage/storage")


def _rows(db: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    """Read a store with apsw (never a second SQLite copy in this process: docs/limits.md)."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(sql, params))
    finally:
        conn.close()


def _store_reasons(db: Path) -> Counter[str]:
    """Every message's decision in every session of a store (``ssa classify``'s path)."""
    sessions = [str(row[0]) for row in _rows(db, "SELECT id FROM session")]
    return Counter(row["reason"] for session in sessions
                   for row in classify_units("opencode", str(db), session=session))


def test_opencode_store_rows_are_decided_as_opencode_writes_them(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    session = OpenCodeTranscript(db)
    assert session.append(*ALL_TURNS) == 25  # 17 here, 8 in the four sub-agents' sessions
    decided = list(classify_units("opencode", str(db), session=session.session_id))
    assert [row["reason"] for row in decided] == OPENCODE_EXPECTED
    assert [row["human"] for row in decided].count(True) == 1
    [(children,)] = _rows(db, "SELECT count(*) FROM session WHERE parent_id = ?",
                          session.session_id)
    [(seq,)] = _rows(db, "SELECT seq FROM event_sequence WHERE aggregate_id = ?",
                     session.session_id)
    [(data,)] = _rows(db, "SELECT data FROM part WHERE data LIKE '%toolu_01%'")
    tool = json.loads(str(data))
    assert children == 4
    assert tool["state"]["status"] == "completed"  # ToolResult completed the part in place
    assert tool["state"]["output"] == "a.py"
    assert session.append() == 0
    assert _rows(db, "SELECT seq FROM event_sequence WHERE aggregate_id = ?",
                 session.session_id) == [(seq,)]  # nothing written, nothing moved
    with pytest.raises(TypeError, match="not a turn"):
        session.append(Typed("kept?"), "typed")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no running tool call"):
        session.append(Typed("kept?"), ToolResult("toolu_99", ""))
    assert len(list(classify_units("opencode", str(db), session=session.session_id))) == 17
    with pytest.raises(ValueError, match="already exists"):
        OpenCodeTranscript(db, session_id=session.session_id)


def test_opencode_child_and_run_sessions_never_count(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    parent = OpenCodeTranscript(db)
    child = OpenCodeTranscript(db, parent_id=parent.session_id)
    run = OpenCodeTranscript(db, run=True)
    for session, reason in ((child, "child_session"), (run, "program_session")):
        session.append(Typed("looks typed"), Reply("ok"))
        assert {(row["human"], row["reason"]) for row in classify_units(
            "opencode", str(db), session=session.session_id)} == {(False, reason)}


@pytest.mark.parametrize(("between", "second"), [
    ((Reply("ok"),), "replay"),  # a repeat is taken for compaction replay
    ((Interrupt(),), "typed"),  # unless the reply before it was aborted
    ((Reply("ok"), SlashCommand("model", "openai/gpt-5")), "typed"),  # or the model changed
])
def test_opencode_repeats_are_decided_by_what_the_store_proves(
    between: tuple[Reply | Interrupt | SlashCommand, ...], second: str, tmp_path: Path,
) -> None:
    session = OpenCodeTranscript(tmp_path / "opencode.db")
    session.append(Typed("run the tests"), *between, Typed("run the tests"))
    reasons = [row["reason"] for row in classify_units(
        "opencode", str(session.path), session=session.session_id)]
    assert reasons[0] == "typed"
    assert reasons[-1] == second


@needs_fixtures
def test_opencode_store_rows_and_real_rows_are_decided_alike(tmp_path: Path) -> None:
    """Every session of the real stores (1.18 SQLite and 1.1 JSON) against every session
    the builder writes, through ``ssa classify``'s code path."""
    real = _store_reasons(FIXTURES / "opencode" / OPENCODE_FIXTURES[0])
    storage = FIXTURES / "opencode" / OPENCODE_FIXTURES[1]
    for info in storage.glob("session/*/*.json"):
        real.update(row["reason"] for row in classify_units("opencode", str(storage),
                                                            session=info.stem))
    db = tmp_path / "opencode.db"
    session = OpenCodeTranscript(db)
    session.append(*ALL_TURNS)
    OpenCodeTranscript(db, run=True).append(Typed("from a script"))
    built = set(_store_reasons(db))
    assert {"typed", "child_session", "program_session", "subtask"} <= built & set(real)
    assert built - set(real) == OPENCODE_UNSEEN


def test_an_opencode_session_a_person_types_into_notifies_the_watcher(
    tmp_path: Path, gateway: Gateway, clock: ManualClock,
) -> None:
    session = OpenCodeTranscript(tmp_path / "opencode.db", clock=clock)
    session.append(Typed("before adoption"), Reply("done"))
    worker = "agent:main:opencode:worker"
    assert gateway.adopt(worker, source="opencode", path=session.path,
                                     thread_id=session.session_id) is not None
    assert gateway.watch("agent:main:main", worker)
    session.append(SubagentRow("explore"), SlashCommand("review"), Reply("ok"))
    assert gateway.scan_upstream() == []
    clock.advance(60_000)
    session.append(Typed("stop, run the tests first"))
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]
    assert len(gateway.drain("agent:main:main")) == 1


def test_a_codex_exec_rollout_gets_no_link(tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path / "r.jsonl", source="exec")
    rollout.append(Typed("run the suite"))
    assert {row["human"] for row in classify_units("codex", str(rollout.path))} == {False}


@pytest.mark.timeout(150)  # three interpreters, each bounded by 40 s
def test_the_example_test_passes_with_the_plugin_and_fixtures_are_off_without_it(
    pytester: pytest.Pytester,
) -> None:
    for name in ("test_adopted_session.py", "test_async_gateway.py"):
        shutil.copy(ROOT / "examples" / name, pytester.path / name)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    without = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", timeout=40)
    without.assert_outcomes(errors=2)  # fixture 'ssa_gateway' not found
    with_plugin = pytester.runpytest_subprocess("-p", "actors.testing", "-p",
                                                "no:cacheprovider", "-q", timeout=40)
    with_plugin.assert_outcomes(passed=2)
    pytester.makeini("[pytest]\nfilterwarnings = error\nssa_fixtures = true\n")
    by_ini = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", timeout=40)
    by_ini.assert_outcomes(passed=2)


def test_the_gateway_fixture_fails_a_test_that_leaves_a_thread_running(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_leak="""
        import threading

        import pytest

        def test_leaks(ssa_gateway):
            stop = threading.Event()
            threading.Thread(target=stop.wait, args=(30,), daemon=True, name="mine").start()

        @pytest.mark.anyio
        async def test_leaks_too(ssa_async_gateway):
            stop = threading.Event()
            threading.Thread(target=stop.wait, args=(30,), daemon=True, name="ours").start()
    """)
    result = pytester.runpytest_subprocess("-p", "actors.testing", "-p", "no:cacheprovider",
                                           "-q", timeout=40)
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(["*thread left running: mine*", "*thread left running: ours*"])


# --- regressions from the adversarial review ------------------------------------------


def test_the_leak_check_leaves_a_wider_fixtures_gateway_alone(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        import pytest
        from actors import Gateway

        @pytest.fixture(scope="module")
        def shared(tmp_path_factory):
            gw = Gateway.open(tmp_path_factory.mktemp("s") / "s.sqlite", monitor=False)
            yield gw
            gw.close()
    """)
    pytester.makepyfile(test_shared="""
        import pytest

        def test_one(shared, ssa_gateway):
            shared.human_message("agent:main:a", channel="t")

        def test_two(shared):
            assert shared.watch("agent:main:main", "agent:main:b")

        @pytest.mark.anyio
        async def test_both(ssa_gateway, ssa_async_gateway):
            assert await ssa_async_gateway.watch("agent:main:main", "agent:main:c")
            assert ssa_gateway.pending_notices("agent:main:main") == []  # another file
    """)
    result = pytester.runpytest_subprocess("-p", "actors.testing", "-p", "no:cacheprovider",
                                           "-q", timeout=40)
    result.assert_outcomes(passed=3)


def test_the_plugin_loads_without_the_library_and_beside_a_users_actors_package(
    pytester: pytest.Pytester,
) -> None:
    pytester.mkpydir("actors")  # the user's own package of that name
    pytester.makepyfile(test_mine="""
        import sys

        def test_mine():
            import actors
            assert not hasattr(actors, "Gateway")  # theirs, not ours
            assert "actors.testing" not in sys.modules
    """)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", timeout=40)
    result.assert_outcomes(passed=1)


def test_a_conftest_may_import_the_kit_before_the_ini_registers_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\nfilterwarnings = error\nssa_fixtures = true\n")
    pytester.makeconftest("from actors.testing import ManualClock  # noqa: F401\n")
    pytester.makepyfile(test_it="""
        import asyncio
        import pytest

        def test_it(ssa_gateway, ssa_clock):
            assert ssa_gateway.watch("agent:main:main", "agent:main:w")

        @pytest.mark.anyio
        async def test_loop_threads_are_not_leaks(ssa_async_gateway):
            await asyncio.to_thread(lambda: None)  # asyncio's own executor thread
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", timeout=40)
    result.assert_outcomes(passed=2)


def test_the_fixtures_take_open_arguments_from_ssa_gateway_options(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_options="""
        import pytest

        woken = []

        @pytest.fixture
        def ssa_gateway_options():
            return {"on_wake": woken.append}

        def test_wakes(ssa_gateway):
            ssa_gateway.watch("agent:main:main", "agent:main:w")
            ssa_gateway.human_message("agent:main:w", channel="t")
            assert woken == ["agent:main:main"]
    """)
    result = pytester.runpytest_subprocess("-p", "actors.testing", "-p", "no:cacheprovider",
                                           "-q", timeout=40)
    result.assert_outcomes(passed=1)


def test_opencode_ids_go_past_the_store_s_newest_with_a_frozen_clock(
    tmp_path: Path, gateway: Gateway, clock: ManualClock,
) -> None:
    db = tmp_path / "opencode.db"
    first = OpenCodeTranscript(db, clock=clock)
    first.append(Typed("before"), Reply("ok"))
    worker = "agent:main:opencode:w"
    assert gateway.adopt(worker, source="opencode", path=db,
                         thread_id=first.session_id) is not None
    assert gateway.watch("agent:main:main", worker)
    resumed = OpenCodeTranscript.resume(db, first.session_id, clock=clock)  # same frozen ms
    resumed.append(Typed("typed after a restart"))
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]
    resumed.append(*[Reply("busy")] * 1100, Typed("more than 4096 ids in one ms"))
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]
    clock.advance(1)
    resumed.append(Typed("and the next ms"))
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]


@needs_fixtures
def test_resuming_a_real_store_with_an_earlier_clock_still_counts(
    tmp_path: Path, gateway: Gateway, clock: ManualClock,
) -> None:
    db = tmp_path / "opencode.db"
    shutil.copy(FIXTURES / "opencode" / OPENCODE_FIXTURES[0], db)
    main_session = "ses_dd45483e1ffey2Pb2WIeXKDqPz"
    worker = "agent:main:opencode:real"
    assert gateway.adopt(worker, source="opencode", path=db, thread_id=main_session)
    assert gateway.watch("agent:main:main", worker)
    OpenCodeTranscript.resume(db, main_session, clock=clock).append(Typed("one more"))
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]


def test_a_failed_append_leaves_the_builder_as_it_was(tmp_path: Path) -> None:
    store = OpenCodeTranscript(tmp_path / "opencode.db")
    store.append(ToolCall("bash", {}, "c1"))
    with pytest.raises(TypeError):
        store.append(ToolResult("c1", "out"), SlashCommand("model", "openai/gpt-5"), "bogus")  # type: ignore[arg-type]
    store.append(ToolResult("c1", "out"), Typed("x"))  # the call is still running
    models = [json.loads(str(row[0])).get("model", {}).get("modelID") for row in _rows(
        store.path, "SELECT data FROM message WHERE json_extract(data, '$.role') = 'user'")]
    assert models == ["claude-sonnet-4-5"]  # the rolled-back /model did not stick
    claude = ClaudeCodeTranscript(tmp_path / "c.jsonl")
    claude.append(Typed("one"))
    with pytest.raises(TypeError):
        claude.append(Typed("two"), "bogus")  # type: ignore[arg-type]
    claude.append(Typed("three"))
    rows = [json.loads(line) for line in claude.path.read_text().splitlines()]
    assert rows[1]["parentUuid"] == rows[0]["uuid"]  # chained to what was written


def test_codex_custom_review_instructions_count(tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path / "r.jsonl")
    rollout.append(SlashCommand("review", "check the error handling in the parser"))
    decided = [(row["human"], row["reason"]) for row in
               classify_units("codex", str(rollout.path))]
    assert (True, "typed") in decided
    assert (False, "review_request") not in decided


def test_turns_and_the_clock_refuse_what_no_tool_or_gateway_takes(tmp_path: Path) -> None:
    for bad, error in ((lambda: Typed(None)), TypeError), ((lambda: ImageOnly(0)), ValueError), \
            ((lambda: SlashCommand("skill:")), ValueError), \
            ((lambda: SlashCommand("/model")), ValueError), \
            ((lambda: ToolCall("", {}, "c")), ValueError), \
            ((lambda: ManualClock(-1)), ValueError), ((lambda: ManualClock(2**53)), ValueError):
        with pytest.raises(error):
            bad()  # type: ignore[no-untyped-call]
    clock = ManualClock(2**53 - 2)
    with pytest.raises(ValueError, match="2\\*\\*53"):
        clock.advance(5)
    assert clock() == 2**53 - 2
    session = PiSession(tmp_path / "p.jsonl")
    session.append(Typed("half \ud800 a surrogate"))  # written as Node writes it: escaped
    assert b"\\ud800" in session.path.read_bytes()


def test_the_leak_check_closes_a_gateway_the_test_left_open(tmp_path: Path) -> None:
    check = LeakCheck(timeout=5.0)
    left = Gateway.open(tmp_path / "left.sqlite", monitor=False, on_wake=lambda key: None,
                        hosts=("agent:main:main",))
    problems = check.check()
    assert problems[0] == "gateway left open (closed now)"
    assert not [t.name for t in threading.enumerate() if t.name.startswith("ssa-hosting")]
    with pytest.raises(GatewayClosed):
        left.drain("agent:main:main")
