"""The harness's fake model servers over real HTTP, without any coding agent."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness.models import FakeModelServer, server_for
from tests.harness.script import Fail, Text, ToolUse


@pytest.fixture(params=["anthropic", "responses", "chat"])
def server(request: pytest.FixtureRequest) -> Iterator[FakeModelServer]:
    with server_for(request.param) as running:
        yield running


PATHS = {"anthropic": "/v1/messages", "responses": "/v1/responses",
         "chat": "/v1/chat/completions"}


def _body(api: str, text: str, *, tools: bool, stream: bool = False) -> dict[str, Any]:
    tool = {"anthropic": {"name": "Bash", "input_schema": {}},
            "responses": {"type": "function", "name": "Bash"},
            "chat": {"type": "function", "function": {"name": "Bash"}}}[api]
    if api == "responses":
        body: dict[str, Any] = {"input": [{"role": "user", "content": [
            {"type": "input_text", "text": text}]}]}
    else:
        body = {"messages": [{"role": "user", "content": text}]}
    return {**body, "model": "m", "stream": stream, "tools": [tool] if tools else []}


def _post(server: FakeModelServer, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(server.base_url + PATHS[server.api.name],
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_side_requests_never_take_the_script(server: FakeModelServer) -> None:
    api = server.api.name
    server.script(Text("scripted one"))
    status, data = _post(server, _body(api, "Generate a title for this", tools=False))
    assert status == 200
    assert b"scripted one" not in data
    assert server.pending == 1
    status, data = _post(server, _body(api, "hello", tools=True))
    assert status == 200
    assert b"scripted one" in data
    assert [r.kind for r in server.requests] == ["side", "main"]
    main = server.wait_main(1, 5)
    assert main.scripted
    assert main.has_text("hello")
    assert main.tool_names == ("Bash",)


def test_streamed_tool_call_and_default(server: FakeModelServer) -> None:
    api = server.api.name
    server.script(ToolUse("Bash", {"command": "echo hi"}))
    status, data = _post(server, _body(api, "go", tools=True, stream=True))
    assert status == 200
    assert b"echo hi" in data
    assert data.rstrip().endswith({"anthropic": b'"message_stop"}', "chat": b"[DONE]",
                                   "responses": b"}"}[api])
    status, data = _post(server, _body(api, "again", tools=True))
    assert b"OK." in data
    assert not server.main_requests()[-1].scripted


def test_unknown_tool_name_and_failure(server: FakeModelServer) -> None:
    api = server.api.name
    server.script(ToolUse("NoSuchTool"), Fail(403, "scripted failure"))
    status, _ = _post(server, _body(api, "one", tools=True))
    assert status == 400
    assert "NoSuchTool" in server.problems[0]
    status, data = _post(server, _body(api, "two", tools=True))
    assert status == 403
    assert b"scripted failure" in data


def test_wait_main_times_out_with_what_it_saw(server: FakeModelServer) -> None:
    _post(server, _body(server.api.name, "title please", tools=False))
    with pytest.raises(TimeoutError, match="side"):
        server.wait_main(1, 0.2)
