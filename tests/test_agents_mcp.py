"""``ssa mcp``: the six tools in memory (``Client(server)``) and over real stdio (``ssa mcp``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors import Gateway
from actors.agents import inbox
from actors.agents.caller import record_caller
from actors.agents.mcp_server import MAX_PAGE, GatewayHolder, build_server

mcp = pytest.importorskip("mcp")

WATCHER = "agent:main:manager"
WORKER = "agent:main:worker"
CALL_TIMEOUT_S = 20


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[GatewayHolder]:
    """The server's gateway holder on a fresh database; closed after the test."""
    held = GatewayHolder(str(tmp_path / "state.sqlite"),
                         opener=lambda where: Gateway.open(where, monitor=False))
    yield held
    held.close()


def call(server: Any, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Run the tool calls in order through an in-memory client; their results."""
    from mcp import Client

    async def session() -> list[Any]:
        results = []
        with anyio.fail_after(CALL_TIMEOUT_S):
            async with Client(server) as client:
                for name, arguments in calls:
                    results.append(await client.call_tool(name, arguments))
        return results
    return anyio.run(session)


def payload(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def test_tools_are_listed_with_the_seeds_names(holder: GatewayHolder) -> None:
    from mcp import Client

    async def listing() -> Any:
        with anyio.fail_after(CALL_TIMEOUT_S):
            async with Client(build_server(holder)) as client:
                return await client.list_tools()
    tools = {tool.name: tool for tool in anyio.run(listing).tools}
    assert set(tools) == {"session_status", "sessions_list", "sessions_send",
                          "pending_notices", "drain", "manage"}
    assert set(tools["session_status"].input_schema["properties"]) >= {"sessionKey",
                                                                       "changesSince"}
    assert tools["session_status"].input_schema["required"] == ["sessionKey"]
    assert set(tools["sessions_send"].input_schema["properties"]) == {
        "senderKey", "targetKey", "text", "watch"}
    # The caller's own key is optional: the server works it out (issue 35).
    assert "required" not in tools["drain"].input_schema or \
        tools["drain"].input_schema["required"] == []
    assert tools["sessions_send"].input_schema["required"] == ["targetKey", "text"]


def test_notice_reconcile_drain(holder: GatewayHolder) -> None:
    gw = holder.get()
    gw.create_session(WORKER)
    assert gw.watch(WATCHER, WORKER)
    for _ in range(3):
        gw.human_message(WORKER, channel="tui")
    pending, status, drained, follow_up, last, empty = call(
        build_server(holder),
        ("pending_notices", {"watcherKey": WATCHER}),
        ("session_status", {"sessionKey": WORKER, "changesSince": 0}),
        ("drain", {"watcherKey": WATCHER}),
        ("pending_notices", {"watcherKey": WATCHER}),
        ("drain", {"watcherKey": WATCHER}),
        ("pending_notices", {"watcherKey": WATCHER}))
    notices = payload(pending)["notices"]
    assert notices == [f'Session "{WORKER}" changed (other actor). Reconcile before acting: '
                       f'session_status sessionKey "{WORKER}" changesSince 0.']
    changes = payload(status)
    assert changes["stateVersion"] == 3
    assert [e["kind"] for e in changes["stateChanges"]["events"]] == [
        "human_direct_message"] * 3
    assert changes["stateChanges"]["truncated"] is False
    assert payload(drained)["notices"] == notices
    # The notice was frozen at the first change: one follow-up covers the two after it.
    assert payload(follow_up)["notices"] == [notices[0].replace("changesSince 0",
                                                                "changesSince 1")]
    assert payload(last)["notices"] == payload(follow_up)["notices"]
    assert payload(empty)["notices"] == []


def test_session_status_pages(holder: GatewayHolder) -> None:
    gw = holder.get()
    gw.create_session(WORKER)
    gw.watch(WATCHER, WORKER)
    for _ in range(7):
        gw.human_message(WORKER, channel="tui")
    first, rest, too_big = call(
        build_server(holder),
        ("session_status", {"sessionKey": WORKER, "changesSince": 0, "limit": 5}),
        ("session_status", {"sessionKey": WORKER, "changesSince": 5, "limit": 5}),
        ("session_status", {"sessionKey": WORKER, "changesSince": 0, "limit": MAX_PAGE + 1}))
    page = payload(first)
    assert [e["sequence"] for e in page["stateChanges"]["events"]] == [1, 2, 3, 4, 5]
    assert page["stateChanges"]["truncated"] is True
    assert page["nextChangesSince"] == 5
    tail = payload(rest)
    assert [e["sequence"] for e in tail["stateChanges"]["events"]] == [6, 7]
    assert "nextChangesSince" not in tail
    assert too_big.is_error
    assert f"limit must be from 1 to {MAX_PAGE}" in too_big.content[0].text


def test_sessions_list_pages(holder: GatewayHolder) -> None:
    gw = holder.get()
    keys = [f"agent:main:s{i:02d}" for i in range(5)]
    for key in keys:
        gw.create_session(key)
    server = build_server(holder)
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(10):
        arguments: dict[str, Any] = {"limit": 2}
        if cursor is not None:
            arguments["cursor"] = cursor
        (result,) = call(server, ("sessions_list", arguments))
        page = payload(result)
        assert page["total"] == 5
        seen += [row["sessionKey"] for row in page["sessions"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == keys
    (bad,) = call(server, ("sessions_list", {"cursor": "nonsense"}))
    assert bad.is_error


def test_sessions_send_into_a_running_session_with_watch(holder: GatewayHolder,
                                                         tmp_path: Path) -> None:
    """The text goes into the target's inbox, where its waiting hook takes it (here: the
    inbox itself, no hook runs); the sender watches the target (issue 35)."""
    gw = holder.get()
    target = "agent:main:claude:target-session"
    gw.create_session(target)
    record_caller(tmp_path, target)  # the target's tool process runs (this process)
    sent, pending = call(
        build_server(holder),
        ("sessions_send", {"senderKey": WATCHER, "targetKey": target, "text": "do it",
                           "watch": True}),
        ("pending_notices", {"watcherKey": WATCHER}))
    result = payload(sent)
    assert result["delivery"] == "queued"  # no waiting hook took it yet: never "delivered"
    assert (result["accepted"], result["watched"]) == (True, True)
    assert [m.text for m in inbox.pending(tmp_path, target)] == ["do it"]
    gw.human_message(target, channel="tui")
    (after,) = call(build_server(holder), ("pending_notices", {"watcherKey": WATCHER}))
    assert payload(pending)["notices"] == []
    assert len(payload(after)["notices"]) == 1
    # Nowhere to deliver: said so, nothing kept, not watched.
    (ghost,) = call(build_server(holder), ("sessions_send", {
        "senderKey": WATCHER, "targetKey": "agent:main:claude:gone", "text": "x",
        "watch": True}))
    assert payload(ghost) == {"accepted": False, "delivery": "no_live_session",
                              "detail": "no running process of that session was found",
                              "watched": False}
    (other,) = call(build_server(holder), ("sessions_send", {
        "senderKey": WATCHER, "targetKey": WORKER, "text": "x"}))
    assert payload(other)["delivery"] == "refused"


@pytest.mark.parametrize(("name", "arguments", "message"), [
    ("session_status", {"sessionKey": ""}, "must not be empty"),
    ("session_status", {"sessionKey": WORKER, "changesSince": -1}, "changes_since"),
    ("drain", {"watcherKey": "bad\nkey"}, "control"),
    ("sessions_send", {"senderKey": WATCHER, "targetKey": "", "text": "x"}, "targetKey"),
])
def test_bad_arguments_are_tool_errors(holder: GatewayHolder, name: str,
                                       arguments: dict[str, Any], message: str) -> None:
    (result,) = call(build_server(holder), (name, arguments))
    assert result.is_error
    assert message in result.content[0].text


def test_database_that_cannot_open_is_a_tool_error(tmp_path: Path) -> None:
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("hello, not a database\n" * 100)
    held = GatewayHolder(str(not_a_db))
    try:
        (result,) = call(build_server(held), ("sessions_list", {}))
    finally:
        held.close()
    assert result.is_error
    assert "session-state" in result.content[0].text or "database" in result.content[0].text


def test_holder_after_close_refuses(holder: GatewayHolder) -> None:
    holder.get()
    holder.close()
    (result,) = call(build_server(holder), ("pending_notices", {"watcherKey": WATCHER}))
    assert result.is_error
    assert "stopping" in result.content[0].text


@pytest.mark.timeout(90)
def test_over_stdio(tmp_path: Path) -> None:
    """`ssa mcp --db X` as a real child process: the tools answer, and EOF stops it."""
    from mcp import Client, StdioServerParameters

    db = tmp_path / "state.sqlite"
    with Gateway.open(db, monitor=False) as gw:
        gw.create_session(WORKER)
        gw.watch(WATCHER, WORKER)
        gw.human_message(WORKER, channel="tui")
    errlog = tmp_path / "server.err"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "actors", "mcp", "--db", str(db)],
        env={"PYTHONPATH": os.pathsep.join(sys.path)}, cwd=str(tmp_path))

    async def session() -> tuple[Any, Any]:
        from mcp.client.stdio import stdio_client

        with anyio.fail_after(60), errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                status = await client.call_tool("session_status",
                                                {"sessionKey": WORKER, "changesSince": 0})
                drained = await client.call_tool("drain", {"watcherKey": WATCHER})
        return status, drained
    status, drained = anyio.run(session)
    assert payload(status)["stateVersion"] == 1
    assert len(payload(drained)["notices"]) == 1
    with Gateway.open(db, monitor=False) as gw:  # the drain was acknowledged durably
        assert gw.pending_notices(WATCHER) == []


def test_mcp_command_without_the_extra(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    import builtins

    real_import = builtins.__import__

    def no_mcp(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "mcp" or name.startswith("mcp."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mcp)
    from actors.cli.app import main

    assert main(["mcp"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "session-state-awareness[mcp]" in err


@pytest.mark.timeout(60)
def test_sigterm_stops_the_server(tmp_path: Path) -> None:
    import signal
    import subprocess

    child = subprocess.Popen(
        [sys.executable, "-m", "actors", "mcp", "--db", str(tmp_path / "s.sqlite")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "0"}}}
        assert child.stdin is not None
        assert child.stdout is not None
        child.stdin.write((json.dumps(request) + "\n").encode())
        child.stdin.flush()
        answer = json.loads(child.stdout.readline())  # serving: it answered
        assert answer["id"] == 1
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)
        for stream in (child.stdin, child.stdout, child.stderr):
            if stream is not None:
                stream.close()


def test_the_largest_page_stays_under_claude_codes_warning(tmp_path: Path) -> None:
    """A full page of events, as the client receives it, is well under 10,000 tokens."""
    from actors import Gateway

    db = tmp_path / "big.sqlite"
    with Gateway.open(db, monitor=False) as gw:
        assert gw.watch("agent:main:main", WORKER)
        for _ in range(MAX_PAGE + 20):
            gw.human_message(WORKER, channel="telegram")

    async def page() -> int:
        from mcp import Client

        holder = GatewayHolder(str(db))
        try:
            async with Client(build_server(holder)) as client:
                result = await client.call_tool(
                    "session_status", {"sessionKey": WORKER, "changesSince": 0,
                                       "limit": MAX_PAGE})
                text = result.content[0].text
                structured = json.dumps(result.structured_content)
                return len(text) + len(structured)
        finally:
            holder.close()

    size = anyio.run(page)
    assert size < 40_000  # characters; about 4 per token


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_the_callers_own_key_is_worked_out_and_manage_makes_it_a_manager(
        holder: GatewayHolder, tmp_path: Path) -> None:
    """The server runs under the tool process whose prompt hook recorded its session: here
    this test's process stands for both (the record is of its first non-shell ancestor)."""
    gw = holder.get()
    gw.create_session(WORKER)
    (refused,) = call(build_server(holder), ("manage", {}))  # no record yet: a tool error
    assert refused.is_error
    assert "--session KEY" in refused.content[0].text
    record_caller(tmp_path, WATCHER)
    (managed,) = call(build_server(holder), ("manage", {}))
    assert payload(managed) == {"sessionKey": WATCHER, "role": "manager", "wake": True,
                                "changed": True}
    assert gw.role(WATCHER) == ("manager", True)
    assert gw.watch(WATCHER, WORKER)
    gw.human_message(WORKER, channel="c")
    (pending,) = call(build_server(holder), ("pending_notices", {}))
    assert len(payload(pending)["notices"]) == 1
    (drained,) = call(build_server(holder), ("drain", {}))
    assert len(payload(drained)["notices"]) == 1
    (off,) = call(build_server(holder), ("manage", {"on": False}))
    assert payload(off)["role"] == "worker"


def test_session_status_and_sessions_list_give_the_tools_title(
        holder: GatewayHolder, tmp_path: Path) -> None:
    """A renamed Claude Code worker is named in both results; a session without a link
    has no ``name`` (issue 33 item 3)."""
    from actors.testing import ClaudeCodeTranscript, Typed

    transcript = ClaudeCodeTranscript(tmp_path / "abc.jsonl")
    transcript.append(Typed("fix the flaky login test"))
    transcript.rename("Flaky login")
    gw = holder.get()
    assert gw.adopt("agent:main:claude:abc", source="claude", path=transcript.path) is not None
    gw.create_session("agent:main:plain")
    status, listed = call(build_server(holder),
                          ("session_status", {"sessionKey": "agent:main:claude:abc"}),
                          ("sessions_list", {}))
    assert payload(status)["name"] == "Flaky login"
    rows = {row["sessionKey"]: row for row in payload(listed)["sessions"]}
    assert rows["agent:main:claude:abc"]["name"] == "Flaky login"
    assert "name" not in rows["agent:main:plain"]
