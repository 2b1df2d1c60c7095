"""``ssa mcp``'s request lines: every request is answered, and none is held whole when too long.

A lone surrogate escape (JSON ``"\\ud800"``) got no answer at all (the SDK's transport
drops a line pydantic refuses); 40 sends of 4 MiB grew the server by 50-180 MB (the SDK
read, copied and parsed each whole; glibc kept the freed blocks).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors import Gateway

pytest.importorskip("mcp")

from actors.agents.mcp_stdio import (  # after importorskip: it needs the mcp extra
    INVALID_REQUEST,
    PARSE_ERROR,
    Refusal,
    _id_in_prefix,
    request_problem,
)

ANSWER_TIMEOUT_S = 20.0


def test_request_problem_answers_what_the_sdk_would_drop() -> None:
    good = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert request_problem(good) is None
    lone = r'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"\ud800"}}'
    refusal = request_problem(lone)
    assert refusal is not None
    assert (refusal.request_id, refusal.code) == (7, INVALID_REQUEST)
    assert "lone surrogate" in refusal.message
    assert request_problem("garbage") == Refusal(None, PARSE_ERROR, "the request is not JSON")
    shapeless = request_problem('{"id": "a"}')
    assert shapeless is not None
    assert (shapeless.request_id, shapeless.code) == ("a", INVALID_REQUEST)
    assert request_problem('{"id": true}') is not None  # a bool is no id: answered as null
    assert request_problem('{"id": true}').request_id is None  # type: ignore[union-attr]


def test_the_id_of_an_over_long_request_is_found_before_its_params() -> None:
    assert _id_in_prefix(b'{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params"') == 12
    assert _id_in_prefix(b'{"id":"x-1","jsonrpc":"2.0"') == "x-1"
    assert _id_in_prefix(b'{"jsonrpc":"2.0","params":{"id":3},"id":4') is None  # not nested
    assert _id_in_prefix(b"xxxx") is None


class Server:
    """``ssa mcp --db`` as a child process, spoken to line by line."""

    def __init__(self, db: Path) -> None:
        self.child = subprocess.Popen(
            [sys.executable, "-m", "actors", "mcp", "--db", str(db)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})

    def send(self, line: bytes) -> None:
        assert self.child.stdin is not None
        self.child.stdin.write(line + b"\n")
        self.child.stdin.flush()

    def answer(self) -> Any:
        assert self.child.stdout is not None
        ready, _, _ = select.select([self.child.stdout], [], [], ANSWER_TIMEOUT_S)
        assert ready, "no answer"
        return json.loads(self.child.stdout.readline())

    def call(self, request_id: int, name: str, arguments: dict[str, Any]) -> Any:
        self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                              "params": {"name": name, "arguments": arguments}}).encode())
        return self.answer()

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.child.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")

    def close(self) -> None:
        for stream in (self.child.stdin, self.child.stdout):
            if stream is not None:
                stream.close()
        try:
            self.child.wait(timeout=ANSWER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait(timeout=ANSWER_TIMEOUT_S)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """An initialized ``ssa mcp`` on a fresh database; stopped after the test."""
    served = Server(tmp_path / "state.sqlite")
    try:
        served.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}).encode())
        assert served.answer()["id"] == 0
        served.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        yield served
    finally:
        served.close()


@pytest.mark.timeout(90)
def test_a_lone_surrogate_and_a_line_of_no_json_get_an_error_answer(server: Server) -> None:
    server.send(rb'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":'
                rb'"session_status","arguments":{"sessionKey":"agent:main:x\ud800"}}}')
    answer = server.answer()
    assert answer["id"] == 2
    assert answer["error"]["code"] == INVALID_REQUEST
    assert "lone surrogate" in answer["error"]["message"]
    server.send(b"garbage")
    assert server.answer() == {"jsonrpc": "2.0", "id": None, "error": {
        "code": PARSE_ERROR, "message": "the request is not JSON"}}
    # It still serves; an unknown key is version 0, as the library and ssa status answer.
    answer = server.call(3, "session_status", {"sessionKey": "agent:main:nobody"})
    assert answer["result"]["structuredContent"] == {"stateVersion": 0}


@pytest.mark.timeout(120)
def test_forty_sends_of_four_mib_are_answered_and_leave_the_server_small(
    server: Server,
) -> None:
    server.call(1, "session_status", {"sessionKey": "agent:main:x"})  # warm: the gateway
    before = server.rss_mb()
    text = "x" * (4 * 1024 * 1024)
    for request_id in range(10, 50):
        answer = server.call(request_id, "sessions_send",
                             {"targetKey": "agent:main:claude:abc", "text": text})
        assert answer["id"] == request_id
        assert answer["error"]["message"] == "the request is longer than 1048576 bytes"
    grown = server.rss_mb() - before
    assert grown < 20, f"grew by {grown:.0f} MB"  # measured: +4 MB; +53 MB before
    assert server.call(99, "session_status", {"sessionKey": "agent:main:x"})["id"] == 99


@pytest.mark.timeout(90)
def test_a_drain_asked_just_before_stdin_closes_is_answered(tmp_path: Path) -> None:
    """Adversary finding (round 34): a client that sends ``drain`` and closes stdin at once
    got no answer, while the drain had acknowledged the notice: it was lost. The server
    now answers what it was asked before it stops (within a grace)."""
    db = tmp_path / "state.sqlite"
    with Gateway.open(db) as gw:
        assert gw.watch("agent:main:mgr", "agent:main:w")
        assert gw.human_message("agent:main:w", channel="x") is not None
    served = Server(db)
    try:
        for line in (
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
                    "name": "drain", "arguments": {"watcherKey": "agent:main:mgr"}}}):
            served.send(json.dumps(line).encode())
        assert served.child.stdin is not None
        served.child.stdin.close()  # at once, as a client that goes away
        assert served.child.stdout is not None
        served.child.wait(timeout=ANSWER_TIMEOUT_S)  # it ends once it answered
        out = served.child.stdout.read()
    finally:
        served.close()
    answers = {a.get("id"): a for a in map(json.loads, out.splitlines())}
    assert 6 in answers, out
    assert len(answers[6]["result"]["structuredContent"]["notices"]) == 1
