"""``ssa send`` and the MCP ``sessions_send``: deliver text into a running session of any tool.

The delivery uses the target tool's push path (:mod:`actors.agents.push`):

* a tool whose path is a command (Codex: ``codex queue``) gets it run at once
  by the very binary of the target's running process: ``queued`` (the tool
  runs it at its next tick, or after the running turn);
* the others get the text in the target's inbox (:mod:`actors.agents.inbox`),
  which its waiting hook delivers (Claude Code: a turn with the text as a
  system notification; OpenCode: a synthetic part; Pi: a custom message).
  ``delivered`` once the waiting hook handed it to the tool within
  :data:`DELIVER_WAIT_S`; ``queued`` while the session is busy (its next
  waiting hook delivers it).

The result never claims more than happened: ``delivered``, ``queued``,
``refused`` (too long, a full inbox, a tool with no push path), or
``no_live_session`` (no running process of that session was found; nothing
is kept). The delivered text is the agent's: every reader decides these rows
as not typed (system notification, synthetic part, custom message, queued
input), so the sender is never told about its own message, and no own-text
record is kept that could hide a person's later words.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TextIO

from actors.agents import inbox
from actors.agents.caller import live_tool_process
from actors.agents.push import PushPath
from actors.agents.spawn import waiter_alive
from actors.agents.tools import tool_of_source
from actors.errors import ArgumentTypeError, InvalidSessionKey
from persistence.keys import key_problem

__all__ = ["DELIVER_WAIT_S", "Delivery", "deliver", "run_send", "send"]

Delivery = Literal["delivered", "queued", "refused", "no_live_session"]
DELIVER_WAIT_S = 5.0
"""How long a send waits for the target's waiting hook to take the message (seconds)."""
_COMMAND_TIMEOUT_S = 10.0


def _push_of(key: str) -> PushPath | None:
    """The push path of the tool of a session key ``agent:<id>:<source>:<rest>``."""
    parts = key.split(":", 3)
    if len(parts) < 4 or parts[0] != "agent":
        return None
    tool = tool_of_source(parts[2])
    return tool.push if tool is not None else None


def deliver(state_dir: Path, sender: str, target: str, text: str) -> tuple[Delivery, str]:
    """Deliver ``text`` from ``sender`` into ``target``'s running session.

    Args:
        state_dir: the folder of the hooks' files (beside the signal log).
        sender: the sending session's key (named to the target).
        target: the receiving session's key.
        text: the message (not empty; at most :data:`actors.agents.inbox.MAX_TEXT_BYTES`).

    Returns:
        ``(status, why)``: see the module docstring; ``why`` is one sentence.

    Caller's thread; blocks up to :data:`DELIVER_WAIT_S` (or the command's 10 s).
    """
    problem = inbox.text_problem(text)
    if problem is not None:
        return "refused", problem
    push = _push_of(target)
    if push is None:
        return "refused", "the target is not a session of a tool ssa can push into"
    pid = live_tool_process(state_dir, target)
    if push.delivery == "command" and push.command is not None and not push.inbox_sends:
        if pid is None:
            return "no_live_session", "no running process of that session was found"
        message = inbox.render([inbox.Message(Path(), sender, text)])
        try:
            done = subprocess.run(  # noqa: S603 - our own push path's argv, no shell
                push.command(pid, target.split(":", 3)[3], message),
                input=message.encode("utf-8", "surrogatepass"), capture_output=True,
                timeout=_COMMAND_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return "refused", f"the push command failed: {exc}"
        if done.returncode != 0:
            return "refused", f"the push command exited {done.returncode}"
        return "queued", "queued in the session; the tool runs it at its next turn"
    alive = waiter_alive(state_dir, target)
    if not alive and pid is None:
        return "no_live_session", "no running process of that session was found"
    try:
        path = inbox.put(state_dir, sender, target, text)
    except inbox.InboxFull as exc:
        return "refused", str(exc)
    except OSError as exc:
        return "refused", f"the inbox could not be written: {exc}"
    if alive:
        deadline = time.monotonic() + DELIVER_WAIT_S
        while time.monotonic() < deadline:  # a sender's bounded wait, not an idle loop
            if not path.exists():
                return "delivered", "handed to the session's tool"
            time.sleep(0.02)
    return "queued", "the session is busy; its next waiting hook delivers it"


def send(start_watch: Callable[[str, str], bool], state_dir: Path, sender: str, target: str,
         text: str, *, watch: bool) -> dict[str, Any]:
    """The seed's ``sessions_send`` over :func:`deliver`, as the MCP tool and ``ssa send`` answer.

    Args:
        start_watch: ``(watcher, target) -> bool``, e.g. an open gateway's
            :meth:`actors.Gateway.watch` (called only when a watch is due).
        state_dir, sender, target, text: as :func:`deliver`.
        watch: after a delivery (or a queued one), make ``sender`` watch the
            session that received the text, from its current state version.

    Returns:
        ``{"accepted", "delivery", "detail"}`` and, with ``watch``, ``"watched"``.

    Raises:
        InvalidSessionKey, ArgumentTypeError: a bad key or text.

    Caller's thread; blocks as :func:`deliver` and on one write.
    """
    for key, name in ((sender, "senderKey"), (target, "targetKey")):
        problem = key_problem(key, what=name)
        if problem is not None:
            raise InvalidSessionKey(problem)
    if not isinstance(text, str):
        raise ArgumentTypeError(f"text must be a str, not {type(text).__name__}")
    if sender == target:
        status: Delivery = "refused"
        detail = "a session does not send to itself"
    else:
        status, detail = deliver(state_dir, sender, target, text)
    accepted = status in ("delivered", "queued")
    result: dict[str, Any] = {"accepted": accepted, "delivery": status, "detail": detail}
    if watch:
        result["watched"] = bool(accepted and start_watch(sender, target))
    return result


def run_send(location: Path | str, target: str, text: str, *, sender: str | None,
             watch: bool, out: TextIO) -> int:
    """Run ``ssa send``: one line saying what happened; returns the exit code.

    Args:
        location: the signal log.
        target: the receiving session's key.
        text: the message.
        sender: ``--from``, or ``None`` for the session this command runs in.
        watch: ``--watch``.
        out: where the line goes.

    Returns:
        0 when delivered or queued, 1 when refused or no live session.

    Raises:
        SessionStateError: no ``--from`` and not inside a session; as :func:`send`.

    Main thread; blocks as :func:`send`.
    """
    from actors import Gateway  # noqa: PLC0415 - a command's own import (start-up cost)
    from actors.agents.manage import resolve_self, state_dir_of  # noqa: PLC0415

    who = resolve_self(location, sender, option="--from KEY")
    def start_watch(watcher: str, watched: str) -> bool:
        with Gateway.open(location, monitor=False) as gw:
            return gw.watch(watcher, watched)

    # The text goes in first; the engine is imported only for a watch (start-up cost).
    result = send(start_watch, state_dir_of(location), who, target, text, watch=watch)
    watched = "" if "watched" not in result else (
        "; watching it" if result["watched"] else "; not watching it")
    out.write(f"{result['delivery']}: {result['detail']}{watched}\n")
    return 0 if result["accepted"] else 1
