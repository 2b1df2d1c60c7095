"""A session's inbox: texts other sessions sent it, until its waiting hook delivers them.

``ssa send`` and the MCP ``sessions_send`` put a message here
(:func:`put`); the target session's waiting hook
(:mod:`actors.agents.hookwait`) watches the folder, takes every message
(:func:`pending`), delivers them through its tool's push path and only then
removes them (:func:`remove`). A message is one private file
(``<state>/hooks/inbox/<hash of the key>/<time>-<random>.json``, 0600 in 0700
folders) holding the sender's key and the text: the signal log never holds
message text, and neither do the logs. Bounded: :data:`MAX_TEXT_BYTES` per
message, :data:`MAX_MESSAGES` waiting per session.

Standard library only; the caller's thread; blocks on a few small file
operations.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
import time
from pathlib import Path
from typing import NamedTuple

__all__ = ["MAX_DELIVERY_BYTES", "MAX_MESSAGES", "MAX_TEXT_BYTES", "InboxFull", "Message",
           "inbox_dir", "pending", "put", "remove", "render", "text_problem"]

MAX_TEXT_BYTES = 16 * 1024
"""Largest text one message carries (UTF-8 bytes); a longer one is refused up front. A
delivery goes through a pipe and into the tool's context: kept well under a pipe's 64 KiB
and a hook output's usual caps."""
MAX_FILE_BYTES = 8 * MAX_TEXT_BYTES
"""A file in an inbox larger than this is no message of ours: it is removed unread."""
MAX_DELIVERY_BYTES = 32 * 1024
"""Messages handed over in one delivery, at most (the rest come with the next)."""
MAX_MESSAGES = 50
"""Messages that may wait for one session; a further one is refused."""


class InboxFull(ValueError):
    """The message is refused: too long, or too many wait for that session already."""


class Message(NamedTuple):
    """One waiting message: its file, the sender's key and the text."""

    path: Path
    sender: str
    text: str


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be sent (empty, or longer than :data:`MAX_TEXT_BYTES`), or
    ``None``. Pure."""
    if not text.strip():
        return "the text is empty"
    if len(_quoted(text).encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        return (f"the text is longer than {MAX_TEXT_BYTES} bytes (as delivered: control "
                "characters count as their escapes)")
    return None


def inbox_dir(state_dir: str | os.PathLike[str], key: str) -> Path:
    """The folder of ``key``'s messages (pure)."""
    name = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return Path(state_dir) / "hooks" / "inbox" / name


def put(state_dir: str | os.PathLike[str], sender: str, target: str, text: str) -> Path:
    """Leave ``text`` from ``sender`` in ``target``'s inbox; returns the message's file.

    Raises:
        InboxFull: the text is empty or longer than :data:`MAX_TEXT_BYTES`, or
            :data:`MAX_MESSAGES` wait already.
        OSError: the folder or the file could not be written.
    """
    data = json.dumps({"v": 1, "from": sender, "text": text}, ensure_ascii=False)
    problem = text_problem(text)
    if problem is not None:
        raise InboxFull(problem)
    directory = inbox_dir(state_dir, target)
    for folder in (directory.parent.parent, directory.parent, directory):
        folder.mkdir(mode=0o700, exist_ok=True)
    if sum(1 for name in os.listdir(directory) if name.endswith(".json")) >= MAX_MESSAGES:
        raise InboxFull(f"{MAX_MESSAGES} messages wait for {target} already")
    name = f"{time.time_ns():020d}-{secrets.token_hex(4)}"
    temporary = directory / f".{name}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data.encode("utf-8", "surrogatepass"))
    finally:
        os.close(fd)
    final = directory / f"{name}.json"
    os.replace(temporary, final)
    return final


def pending(state_dir: str | os.PathLike[str], key: str) -> list[Message]:
    """``key``'s waiting messages, oldest first, as many as one delivery carries
    (:data:`MAX_DELIVERY_BYTES`, at least one); an unreadable one is skipped."""
    directory = inbox_dir(state_dir, key)
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
    except OSError:
        return []
    found = []
    for name in names[:MAX_MESSAGES]:
        path = directory / name
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                os.unlink(path)  # no message of ours: never let it block the ones after
                continue
            value = json.loads(path.read_bytes().decode("utf-8", "surrogatepass"))
        except (OSError, ValueError):
            continue
        if isinstance(value, dict) and isinstance(value.get("text"), str) \
                and isinstance(value.get("from"), str):
            found.append(Message(path=path, sender=value["from"], text=value["text"]))
            if len(render(found).encode("utf-8", "surrogatepass")) > MAX_DELIVERY_BYTES \
                    and len(found) > 1:
                found.pop()
                break
    return found


def remove(messages: list[Message]) -> None:
    """Remove delivered messages (one already gone is fine)."""
    for message in messages:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(message.path)


def _quoted(text: str) -> str:
    """The body as quoted lines (``> ``), control characters but tab escaped, so a body
    can never look like another message's header or a notice."""
    cleaned = "".join(ch if ch in "\n\t" or (ch.isprintable() and not 0xD800 <= ord(ch)
                                                   <= 0xDFFF) else f"\\u{ord(ch):04x}"
                      for ch in text)
    return "\n".join("> " + line for line in cleaned.split("\n"))


def render(messages: list[Message]) -> str:
    """The text a session is given for its messages (each names its sender). Pure."""
    parts = []
    for message in messages:
        parts.append(f"Message from session {message.sender} (sent with ssa sessions_send; "
                     f"not typed by a person):\n{_quoted(message.text)}")
    return "\n\n".join(parts)
