"""The test kit (actors.testing): the clock, the builders, the pytest plugin, the example."""

from __future__ import annotations

import json
import shutil
import threading
from collections import Counter
from pathlib import Path

import pytest

from actors.testing import (
    DEFAULT_START_MS,
    ClaudeCodeTranscript,
    Compaction,
    ImageOnly,
    Interrupt,
    LeakCheck,
    ManualClock,
    Reply,
    SlashCommand,
    SubagentRow,
    ToolCall,
    ToolResult,
    Typed,
)
from actors.upstream._classify import classify_units
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
             SubagentRow("a sub-agent's prompt"), ImageOnly(2))
CLAUDE_REASONS = ["typed", "not_user", "not_user", "tool_result", "meta", "command",
                  "command_output", "interrupted", "not_user", "compact_summary", "sidechain",
                  "image_only"]


def test_claude_code_builder_rows_are_decided_as_the_tool_writes_them(tmp_path: Path) -> None:
    session = ClaudeCodeTranscript(tmp_path / "s.jsonl")
    assert session.append(*ALL_TURNS) == len(CLAUDE_REASONS)
    decided = list(classify_units("claude", str(session.path)))
    assert [row["reason"] for row in decided] == CLAUDE_REASONS
    assert [row["human"] for row in decided] == [True] + [False] * 11
    rows = [json.loads(line) for line in session.path.read_text().splitlines()]
    assert all(row["sessionId"] == "s" for row in rows)
    assert [row["timestamp"] for row in rows] == sorted(row["timestamp"] for row in rows)
    with pytest.raises(TypeError, match="not a turn"):
        session.append("typed")  # type: ignore[arg-type]


@needs_fixtures
def test_builder_rows_and_real_rows_of_the_same_shape_are_decided_alike(tmp_path: Path) -> None:
    """Every reason the real Claude Code fixtures hold, the builder's rows get too."""
    real: Counter[str] = Counter()
    for path in sorted((FIXTURES / "claude-code").glob("*.jsonl")):
        real.update(row["reason"] for row in classify_units("claude", str(path)))
    session = ClaudeCodeTranscript(tmp_path / "s.jsonl")
    session.append(*ALL_TURNS)
    built = Counter(row["reason"] for row in classify_units("claude", str(session.path)))
    shared = set(real) & set(built)
    assert shared >= {"typed", "not_user", "tool_result", "meta", "command", "command_output",
                      "interrupted", "compact_summary"}
    assert set(built) - shared == {"sidechain", "image_only"}  # no such rows in the fixtures


def test_the_example_test_passes_with_the_plugin_and_fixtures_are_off_without_it(
    pytester: pytest.Pytester,
) -> None:
    example = ROOT / "examples" / "test_adopted_session.py"
    shutil.copy(example, pytester.path / example.name)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    without = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", timeout=40)
    without.assert_outcomes(errors=1)  # fixture 'ssa_gateway' not found
    with_plugin = pytester.runpytest_subprocess("-p", "actors.testing", "-p",
                                                "no:cacheprovider", "-q", timeout=40)
    with_plugin.assert_outcomes(passed=1)
    pytester.makeini("[pytest]\nfilterwarnings = error\nssa_fixtures = true\n")
    by_ini = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", timeout=40)
    by_ini.assert_outcomes(passed=1)


def test_the_gateway_fixture_fails_a_test_that_leaves_a_thread_running(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_leak="""
        import threading

        def test_leaks(ssa_gateway):
            stop = threading.Event()
            threading.Thread(target=stop.wait, args=(30,), daemon=True, name="mine").start()
    """)
    result = pytester.runpytest_subprocess("-p", "actors.testing", "-p", "no:cacheprovider",
                                           "-q", timeout=60)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*thread left running: mine*"])
