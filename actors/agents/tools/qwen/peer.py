"""Write one message into the running Qwen Code session this process belongs to.

``python -m actors.agents.tools.qwen.peer`` reads the text on stdin and sends
it to the session's messaging socket as Qwen Code 0.24.4 frames it:
newline-delimited JSON, an ``auth`` line with the child token, then a
``user`` message (``priority: "next"``). The socket and the token are the
ones Qwen Code gives its child processes (``QWEN_CODE_MESSAGING_SOCKET``,
``QWEN_CODE_MESSAGING_TOKEN``), which the waiting hook inherited from the
hook that started it. Exit 0 when the frame was written, 1 (with one line on
stderr) otherwise. Main thread; blocks up to 5 s.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import uuid

__all__ = ["main", "send"]

TIMEOUT_S = 5.0


def send(socket_path: str, token: str, text: str) -> None:
    """Write the auth line and one user message to ``socket_path``.

    Raises:
        OSError: the socket cannot be reached or written.
    """
    frame = {"msgV": 1, "msgId": str(uuid.uuid4()), "type": "user", "priority": "next",
             "message": {"role": "user", "content": text}}
    data = (json.dumps({"msgV": 1, "type": "auth", "token": token}) + "\n"
            + json.dumps(frame, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(TIMEOUT_S)
        connection.connect(socket_path)
        connection.sendall(data)
        connection.shutdown(socket.SHUT_WR)


def main() -> int:
    """The command: the text on stdin, the socket and token from the environment."""
    path = os.environ.get("QWEN_CODE_MESSAGING_SOCKET", "")
    token = os.environ.get("QWEN_CODE_MESSAGING_TOKEN", "")
    if not path or not token:
        sys.stderr.write("ssa: no Qwen Code messaging socket in this environment\n")
        return 1
    try:
        send(path, token, sys.stdin.read())
    except OSError as exc:
        sys.stderr.write(f"ssa: the Qwen Code session's socket: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
