"""``ssa mcp``: the six tools in memory (:class:`McpServer`) and over real stdio (``ssa mcp``).

The MCP SDK no longer serves (issue 33: its import cost 0.8 s before the first answer); it
is the oracle here: the tool schemas it generates for the same functions, the arguments it
refuses, and its own client driving ``ssa mcp`` end to end.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from actors import Gateway
from actors.agents import inbox
from actors.agents.caller import record_caller
from actors.agents.mcp_rpc import PROTOCOL_VERSIONS, McpServer
from actors.agents.mcp_server import MAX_PAGE, GatewayHolder, build_server
from actors.agents.mcp_tools import DEFAULT_TYPED_TEXT, DESCRIPTIONS, ToolFailure, tool_functions
from tests._upstream_rows import claude_user

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


def _wire(message: dict[str, Any]) -> Any:
    """``message`` as a client reads it (through JSON)."""
    return json.loads(json.dumps(message))


def call(server: McpServer, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Run the tool calls in order as JSON-RPC ``tools/call`` requests; their results, shaped
    as the SDK client's (``is_error``, ``content[0].text``, ``structured_content``)."""
    results = []
    for request_id, (name, arguments) in enumerate(calls):
        answer = _wire(server.handle({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                                      "params": {"name": name, "arguments": arguments}}) or {})
        assert answer["id"] == request_id
        result = answer["result"]
        results.append(SimpleNamespace(
            is_error=result["isError"],
            content=[SimpleNamespace(text=c["text"]) for c in result["content"]],
            structured_content=result.get("structuredContent")))
    return results


def payload(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def sdk_server(holder: GatewayHolder) -> Any:
    """The MCP SDK's server of the same tool functions, as ``ssa mcp`` built it before issue 33."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    def as_before(function: Any) -> Any:
        @functools.wraps(function)  # the SDK reads the signature through __wrapped__
        def wrapped(**arguments: Any) -> Any:
            try:
                return function(**arguments)
            except ToolFailure as exc:  # the SDK's words for a failing tool, as before
                raise ToolError(str(exc)) from None
        return wrapped

    server = MCPServer("ssa")
    for name, function in tool_functions(holder).items():
        server.tool(description=DESCRIPTIONS[name])(as_before(function))
    return server


def test_tools_are_listed_with_the_seeds_names(holder: GatewayHolder) -> None:
    answer = _wire(build_server(holder).handle({"jsonrpc": "2.0", "id": 1,
                                                "method": "tools/list"}) or {})
    tools = {tool["name"]: tool for tool in answer["result"]["tools"]}
    assert set(tools) == {"session_status", "sessions_list", "sessions_send",
                          "pending_notices", "drain", "manage"}
    assert set(tools["session_status"]["inputSchema"]["properties"]) >= {"sessionKey",
                                                                         "changesSince"}
    assert tools["session_status"]["inputSchema"]["required"] == ["sessionKey"]
    assert set(tools["sessions_send"]["inputSchema"]["properties"]) == {
        "senderKey", "targetKey", "text", "watch"}
    # The caller's own key is optional: the server works it out (issue 35).
    assert "required" not in tools["drain"]["inputSchema"] or \
        tools["drain"]["inputSchema"]["required"] == []
    assert tools["sessions_send"]["inputSchema"]["required"] == ["targetKey", "text"]


def test_the_tools_are_listed_as_the_sdk_lists_the_same_functions(
        holder: GatewayHolder) -> None:
    """Oracle: the MCP SDK (pydantic) generates, for the same functions, the same names,
    descriptions, input schemas and output schemas, tool for tool and in order."""
    from mcp import Client

    async def listing() -> Any:
        with anyio.fail_after(CALL_TIMEOUT_S):
            async with Client(sdk_server(holder)) as client:
                return await client.list_tools()
    expected = [tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                for tool in anyio.run(listing).tools]
    assert _wire({"tools": build_server(holder).tools()})["tools"] == expected


def test_the_protocol_versions_are_the_sdks() -> None:
    """Oracle: ``initialize`` speaks the revisions the SDK negotiates by handshake."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    assert PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    server = build_server(GatewayHolder(None))
    for asked, answered in [(v, v) for v in PROTOCOL_VERSIONS] + [
            ("2099-01-01", LATEST_HANDSHAKE_VERSION), (7, LATEST_HANDSHAKE_VERSION)]:
        answer = server.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": asked, "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}})
        assert answer is not None
        assert answer["result"]["protocolVersion"] == answered
        assert answer["result"]["capabilities"] == {"tools": {"listChanged": False}}
        assert answer["result"]["serverInfo"]["name"] == "ssa"


def _first_lines(text: str) -> str:
    """A validation error without pydantic's ``[type=...]`` detail and help address."""
    return "\n".join(line.split(" [type=")[0] for line in text.splitlines()
                     if "For further information" not in line)


@pytest.mark.parametrize(("name", "arguments"), [
    ("session_status", {"sessionKey": 5}),
    ("session_status", {}),
    ("session_status", {"sessionKey": WORKER, "changesSince": "2"}),
    ("session_status", {"sessionKey": WORKER, "changesSince": 1.5}),
    ("session_status", {"sessionKey": WORKER, "changesSince": 2.0}),
    ("session_status", {"sessionKey": WORKER, "changesSince": True}),
    ("session_status", {"sessionKey": WORKER, "changesSince": None, "other": 1}),
    ("session_status", {"sessionKey": WORKER, "limit": [1]}),
    ("session_status", {"sessionKey": None, "limit": "x"}),
    ("sessions_list", {"limit": "x"}),
    ("sessions_list", {"cursor": 3}),
    ("manage", {"on": "maybe"}),
    ("manage", {"on": 2}),
    ("sessions_send", {"targetKey": WORKER}),
    ("sessions_send", {"targetKey": WORKER, "text": "x", "watch": "no", "senderKey": ""}),
    ("drain", {"watcherKey": WATCHER}),
    ("nosuch", {}),
])
def test_arguments_are_taken_and_refused_as_the_sdk_did(
        holder: GatewayHolder, name: str, arguments: dict[str, Any]) -> None:
    """Oracle: the SDK, serving the same functions, gives the same outcome and the same words
    (but for pydantic's ``[type=...]`` detail, which echoes the caller's value)."""
    from mcp import Client

    holder.get().create_session(WORKER)

    async def sdk_call() -> Any:
        with anyio.fail_after(CALL_TIMEOUT_S):
            async with Client(sdk_server(holder)) as client:
                return await client.call_tool(name, arguments)
    expected = anyio.run(sdk_call)
    (ours,) = call(build_server(holder), (name, arguments))
    assert ours.is_error == expected.is_error
    if ours.is_error:
        assert ours.content[0].text == _first_lines(expected.content[0].text)
    else:
        assert ours.structured_content == expected.structured_content
        assert ours.content[0].text == expected.content[0].text


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


def test_session_status_gives_the_typed_text_state_and_transcript(
        holder: GatewayHolder, tmp_path: Path) -> None:
    """Issue 33: what a person typed into an adopted session, read from its transcript,
    where its tool stands, and the transcript itself, in one call."""
    gw = holder.get()
    path = tmp_path / "projects" / "-work" / "ce24e94d.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(claude_user("already there"))
    key = "agent:main:claude:ce24e94d"
    assert gw.adopt(key, source="claude", path=path) is not None
    assert gw.watch(WATCHER, key)
    with path.open("ab") as handle:
        handle.write(claude_user("please stop the deploy " + "x" * 600))
    assert gw.scan_upstream()
    gw.note_activity(key, "idle", at=1_000)
    default, short, none = call(
        build_server(holder),
        ("session_status", {"sessionKey": key, "changesSince": 0}),
        ("session_status", {"sessionKey": key, "changesSince": 0, "typedText": 10}),
        ("session_status", {"sessionKey": key, "changesSince": 0, "typedText": 0}))
    answer = payload(default)
    [typed] = answer["typedText"]
    assert typed["status"] == "ok"
    assert typed["texts"][0].startswith("please stop the deploy")
    assert len(typed["texts"][0]) == DEFAULT_TYPED_TEXT
    assert answer["upstream"]["path"] == str(path.resolve())
    assert answer["workerState"]["state"] in ("idle", "busy")
    assert payload(short)["typedText"][0]["texts"] == ["please st…"]
    assert "typedText" not in payload(none)


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
    """`ssa mcp --db X` as a real child process, driven by the SDK's own stdio client:
    initialize, ping, list_tools, call_tool; EOF stops it."""
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
                assert client.server_info is not None
                assert client.server_info.name == "ssa"
                assert client.protocol_version in PROTOCOL_VERSIONS
                assert client.server_capabilities.tools is not None
                assert "session_status" in (client.instructions or "")
                listed = await client.list_tools()
                assert [t.name for t in listed.tools] == list(DESCRIPTIONS)
                status = await client.call_tool("session_status",
                                                {"sessionKey": WORKER, "changesSince": 0})
                drained = await client.call_tool("drain", {"watcherKey": WATCHER})
                refused = await client.call_tool("session_status", {"sessionKey": 5})
                assert refused.is_error
        return status, drained
    status, drained = anyio.run(session)
    assert payload(status)["stateVersion"] == 1
    assert len(payload(drained)["notices"]) == 1
    with Gateway.open(db, monitor=False) as gw:  # the drain was acknowledged durably
        assert gw.pending_notices(WATCHER) == []


_HEAVY = ("mcp", "mcp_types", "pydantic", "pydantic_core", "anyio", "msgspec", "apsw",
          "pykka", "actors.facade", "actors.engine", "persistence.runtime")
"""What ``ssa mcp`` must not import before its first answers (the SDK cost 0.8 s)."""


def _serve_in_child(db: Path, script: str, requests: list[dict[str, Any]]) -> tuple[
        list[Any], str]:
    """Run ``python -c script`` (which serves ``ssa mcp --db db``) with ``requests`` on stdin;
    its answers and its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", script, "mcp", "--db", str(db)],
        input="".join(json.dumps(r) + "\n" for r in requests).encode(), capture_output=True,
        timeout=CALL_TIMEOUT_S, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr.decode()


_HANDSHAKE: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]


def test_the_first_answers_import_neither_the_sdk_nor_the_gateway(tmp_path: Path) -> None:
    """Issue 33: ``initialize`` took 0.85 s, 0.81 s of it ``import mcp``. Through the
    ``ssa`` entry point, answering ``initialize`` and ``tools/list`` imports none of the
    SDK, pydantic, anyio, msgspec, APSW or the gateway (what a tool call needs comes then)."""
    script = ("import atexit, sys\n"
              "atexit.register(lambda: sys.stderr.write('MODULES ' + ' '.join(sys.modules)))\n"
              "from actors.cli.command import main\n"
              "raise SystemExit(main(sys.argv[1:]))\n")
    answers, err = _serve_in_child(tmp_path / "s.sqlite", script, _HANDSHAKE)
    assert [a["id"] for a in answers] == [0, 1]
    assert len(answers[1]["result"]["tools"]) == len(DESCRIPTIONS)
    modules = err.rsplit("MODULES ", 1)[1].split()
    assert [m for m in modules if m.startswith(_HEAVY)] == []


def test_mcp_serves_without_the_sdk_installed(tmp_path: Path) -> None:
    """The ``mcp`` extra is no longer needed to serve: with ``mcp`` and ``pydantic``
    unimportable, ``ssa mcp`` answers the handshake and a tool call (before: exit 1)."""
    script = ("import sys\n"
              "for name in ('mcp', 'mcp_types', 'pydantic', 'pydantic_core'):\n"
              "    sys.modules[name] = None\n"
              "from actors.cli.command import main\n"
              "raise SystemExit(main(sys.argv[1:]))\n")
    answers, _ = _serve_in_child(tmp_path / "s.sqlite", script, [*_HANDSHAKE, {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "session_status", "arguments": {"sessionKey": WORKER}}}])
    by_id = {a["id"]: a for a in answers}
    assert set(by_id) == {0, 1, 2}
    assert by_id[2]["result"]["structuredContent"] == {"stateVersion": 0}


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

    holder = GatewayHolder(str(db))
    try:
        (result,) = call(build_server(holder), ("session_status", {
            "sessionKey": WORKER, "changesSince": 0, "limit": MAX_PAGE}))
    finally:
        holder.close()
    size = len(result.content[0].text) + len(json.dumps(result.structured_content))
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


@pytest.mark.parametrize(("rest", "light"), [
    ([], ""), (["--db", "/x/s.sqlite"], "/x/s.sqlite"), (["--db=~/s.sqlite"], "~/s.sqlite"),
    (["--help"], None), (["--db"], None), (["--db", "--help"], None), (["--db="], None),
    (["--db", "a", "extra"], None), (["-h"], None)])
def test_only_ssa_mcp_with_at_most_db_takes_the_light_path(rest: list[str],
                                                           light: str | None) -> None:
    """The rest (help, mistakes) goes to the full parser, which answers them as before."""
    from actors.cli.command import _mcp_db

    assert _mcp_db(rest) == light


def test_ssa_mcp_help_is_the_full_parsers(capsys: pytest.CaptureFixture[str]) -> None:
    from actors.cli.command import main

    with pytest.raises(SystemExit) as exited:
        main(["mcp", "--help"])
    assert exited.value.code == 0
    assert "--db PATH_OR_URL" in capsys.readouterr().out


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
