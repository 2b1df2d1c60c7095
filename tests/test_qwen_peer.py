"""Qwen Code's push path (issue 35): one message frame on the session's messaging socket,
as Qwen Code 0.24.4 reads it (``actors.agents.tools.qwen.peer``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

from actors.agents.tools.qwen.peer import send

TIMEOUT_S = 10.0


def _listen(path: Path) -> tuple[socket.socket, threading.Thread, list[bytes]]:
    """A socket accepting one connection on a thread; the bytes it got land in the list."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(TIMEOUT_S)
    received: list[bytes] = []

    def accept() -> None:
        connection, _ = server.accept()
        with connection:
            connection.settimeout(TIMEOUT_S)
            chunks = []
            while chunk := connection.recv(65536):
                chunks.append(chunk)
            received.append(b"".join(chunks))
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    return server, thread, received


def test_a_frame_is_an_auth_line_then_one_user_message(tmp_path: Path) -> None:
    server, thread, received = _listen(tmp_path / "s.sock")
    try:
        send(str(tmp_path / "s.sock"), "t0ken", "Session state: …\nline two")
        thread.join(TIMEOUT_S)
    finally:
        server.close()
    assert not thread.is_alive()
    auth, frame, rest = received[0].decode().split("\n")
    assert json.loads(auth) == {"msgV": 1, "type": "auth", "token": "t0ken"}
    message = json.loads(frame)
    assert (message["type"], message["priority"]) == ("user", "next")
    assert message["message"] == {"role": "user", "content": "Session state: …\nline two"}
    assert rest == ""


def test_the_command_reads_the_text_on_stdin_and_the_socket_from_the_environment(
        tmp_path: Path) -> None:
    server, thread, received = _listen(tmp_path / "s.sock")
    env = {**os.environ, "QWEN_CODE_MESSAGING_SOCKET": str(tmp_path / "s.sock"),
           "QWEN_CODE_MESSAGING_TOKEN": "t0ken",
           "PYTHONPATH": str(Path(__file__).parents[1])}
    try:
        done = subprocess.run([sys.executable, "-m", "actors.agents.tools.qwen.peer"],
                              input=b"hello", env=env, capture_output=True,
                              timeout=TIMEOUT_S, check=False)
        thread.join(TIMEOUT_S)
    finally:
        server.close()
    assert not thread.is_alive()
    assert done.returncode == 0, done.stderr
    assert b'"content": "hello"' in received[0]
    env.pop("QWEN_CODE_MESSAGING_SOCKET")
    done = subprocess.run([sys.executable, "-m", "actors.agents.tools.qwen.peer"],
                          input=b"x", env=env, capture_output=True, timeout=TIMEOUT_S,
                          check=False)
    assert done.returncode == 1
    assert b"no Qwen Code messaging socket" in done.stderr
