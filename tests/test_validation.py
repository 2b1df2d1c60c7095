"""Argument validation at the API boundary (api-contract.md, "Errors")."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from actors import Gateway
from actors.errors import (
    ArgumentTypeError,
    InvalidArgument,
    InvalidChangesSince,
    InvalidKind,
    InvalidOutcome,
    InvalidSessionKey,
)
from actors.facade import validate as v
from persistence.keys import (
    agent_id_of,
    is_agent_qualified,
    is_group_key,
    is_subagent_key,
    main_session_key,
)


@pytest.mark.parametrize(
    "key",
    ["", "x" * 513, "agent:main:a\nb", "agent:main:\x00", 'agent:main:"quoted"',
     "agent:main:back\\slash", "agent:main:\u2028", "agent:main:\ud800", "\ufeffagent:main:x",
     "agent:main:\u200fRTL", "agent:main:\u202eevil", "agent:main:x\uff02y", "agent:main:a\u201cb",
     "agent:main:a\u3000b", "agent:main:\u2066isolate"],
)
def test_bad_keys_are_rejected_with_invalid_session_key(key: str) -> None:
    with pytest.raises(InvalidSessionKey) as info:
        v.check_key(key, "key")
    assert "key" in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "key", ["global", "agent:main:main", "x" * 512, "agent:main:Семья", "agent:main:room 1",
            "agent:main:it's", "agent:main:\U0001f600"])
def test_good_keys_pass(key: str) -> None:
    assert v.check_key(key) == key


def test_a_non_string_key_is_a_type_error() -> None:
    with pytest.raises(ArgumentTypeError) as info:
        v.check_key(5, "target_key")
    assert isinstance(info.value, TypeError)
    assert "target_key" in str(info.value)


def test_key_helpers_follow_the_contract() -> None:
    assert is_agent_qualified("agent:main:main")
    assert not is_agent_qualified("agent:main")
    assert not is_agent_qualified("agent::x")
    assert not is_agent_qualified("global")
    assert agent_id_of("agent:ops:x") == "ops"
    assert agent_id_of("global") == "main"
    assert is_subagent_key("agent:main:subagent:child")
    assert not is_subagent_key("agent:main:main")
    assert is_group_key("agent:main:telegram:group:room-1")
    assert is_group_key("agent:main:slack:channel:C1")
    assert is_group_key("agent:main:x", "group")
    assert not is_group_key("global", "group")
    assert main_session_key("ops") == "agent:ops:main"


def test_changes_since_must_be_a_non_negative_int() -> None:
    assert v.check_changes_since(0) == 0
    assert v.check_changes_since(2**80) == 2**63 - 1
    with pytest.raises(InvalidChangesSince):
        v.check_changes_since(-1)
    for bad in (1.5, True, "3", None):
        with pytest.raises(ArgumentTypeError):
            v.check_changes_since(bad)


def test_kinds_actor_types_and_outcomes_are_closed_sets() -> None:
    assert v.check_kind("goal_changed") == "goal_changed"
    with pytest.raises(InvalidKind):
        v.check_kind("created")
    with pytest.raises(InvalidKind):
        v.check_actor_type("robot")
    with pytest.raises(InvalidOutcome):
        v.check_outcome("crashed")
    assert v.check_outcome("cancelled") == "cancelled"


def test_payloads_must_be_small_json_objects_that_round_trip() -> None:
    assert v.check_payload({"outcome": "error"}) == '{"outcome":"error"}'
    assert v.check_payload(None) is None
    with pytest.raises(ArgumentTypeError):
        v.check_payload(["not", "a", "dict"])
    with pytest.raises(ArgumentTypeError):
        v.check_payload({"x": object()})
    with pytest.raises(InvalidArgument):
        v.check_payload({"x": "y" * (v.MAX_PAYLOAD_BYTES + 1)})
    with pytest.raises(InvalidArgument):
        v.check_payload({"x": float("nan")})
    with pytest.raises(ArgumentTypeError, match="keys must be str"):
        v.check_payload({1: 2})
    with pytest.raises(ArgumentTypeError, match="tuple"):
        v.check_payload({"x": (1, 2)})
    deep: dict[str, object] = {}
    node = deep
    for _ in range(2000):
        node["x"] = {}
        node = node["x"]  # type: ignore[assignment]
    with pytest.raises(InvalidArgument, match="nested deeper"):
        v.check_payload(deep)
    assert v.check_payload({"a": [1, 2.5, None, True, {"b": "c"}]}) == (
        '{"a":[1,2.5,null,true,{"b":"c"}]}')


def test_a_run_failed_record_needs_one_of_the_failure_outcomes() -> None:
    v.check_run_failed_payload("run_failed", {"outcome": "timeout"})
    v.check_run_failed_payload("goal_changed", None)
    for payload in (None, {"outcome": "ok"}, {"outcome": "boom"}, {}):
        with pytest.raises(InvalidOutcome):
            v.check_run_failed_payload("run_failed", payload)


def test_text_fields_reject_surrogates_and_overlong_values() -> None:
    assert v.check_text(None, "run_id", optional=True) is None
    with pytest.raises(InvalidArgument):
        v.check_text("\ud800", "summary")
    with pytest.raises(InvalidArgument):
        v.check_text("x" * 1001, "summary")
    with pytest.raises(InvalidArgument):
        v.check_text("", "summary")
    with pytest.raises(ArgumentTypeError):
        v.check_text(b"bytes", "summary")


@pytest.mark.parametrize("url", ["sqlite:///x.db", "file:///tmp/x.db", "mysql://u@h/db"])
def test_a_url_of_another_scheme_is_refused_and_creates_nothing(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgument, match="SQLite file path or a postgresql:// URL"):
        Gateway.open(url, monitor=False)
    assert list(tmp_path.iterdir()) == []  # no directory named after the scheme


@pytest.mark.parametrize("url", ["postgresql://u@h/db?schema=Bad-Name",
                                 "postgresql://u@h/db?schema=",
                                 "postgresql://u@h/db?nosuchparam=1"])
def test_a_bad_postgresql_url_is_refused_before_connecting(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("psycopg")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgument, match=r"schema|PostgreSQL URL"):
        Gateway.open(url, monitor=False)
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_refuses_another_url_scheme_for_db(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from actors.cli.app import main

    with pytest.raises(SystemExit) as exit_info:
        main(["list", "--db", "sqlite:///x.db"])
    assert exit_info.value.code == 2
    assert "postgresql:// URL" in capsys.readouterr().err


@pytest.mark.parametrize("clock", [lambda: time.time_ns() // 1000, time.time_ns])
def test_a_clock_of_microseconds_or_nanoseconds_is_refused_at_open(
        tmp_path: Path, clock: Callable[[], int]) -> None:
    from actors.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="microseconds or nanoseconds"):
        Gateway.open(tmp_path / "x.sqlite", clock=clock, monitor=False)
