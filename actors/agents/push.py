"""How ``ssa hook <tool> --wait`` hands a notice to a running session: :class:`PushPath`.

A tool whose sessions can be woken from outside names its push path in its
package (:mod:`actors.agents.tools`, ``AgentTool.push``); the generic wait
loop (:mod:`actors.agents.hookwait`), the prompt hook and ``ssa install``
read it and name no tool. ``docs/push.md`` has what each tool was measured to
allow. In short:

* **Claude Code** runs ``ssa hook claude-code --wait`` as a ``Stop`` command
  hook with ``"asyncRewake": true``: it runs in the background once a turn
  ends; when it exits 2, Claude Code shows its stderr to the model as a
  system notification and starts a turn, even when the session is idle (a
  busy one gets it before its next model request). It is armed again at the
  end of that turn.
* **Codex** has no hook that can start a turn. The prompt hook of a manager
  starts the waiting hook detached (once per session); it delivers with
  ``codex queue --thread ID --message TEXT`` (the message enters as queued
  input, which the TUI runs at its next 10 s tick). Mid-turn, an async
  ``PostToolUse`` hook puts pending notices into the next request.
* **OpenCode** and **Pi**: their plugin and extension (package data) start the
  waiting hook for each session they serve and read one JSON line per
  delivery from its stdout; they inject it themselves (OpenCode:
  ``session.promptAsync`` with a synthetic part; Pi: ``pi.sendMessage`` with
  ``triggerTurn``).
"""

from __future__ import annotations

from collections.abc import Callable

from persistence.record import Record

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import Literal

__all__ = ["PUSH_EVENT", "WAIT_TIMEOUT_S", "PushPath"]

PUSH_EVENT = "ssa-push"
"""The event whose output form is one JSON line ``{"text": ...}`` (stream delivery): what our
OpenCode plugin and Pi extension read from their waiting hook."""


class PushPath(Record):
    """How a waiting hook delivers to one tool's session.

    Attributes:
        event: the hook event whose output form the notices take
            (:func:`actors.agents.hookinput.render_output`).
        delivery: ``"exit"``: write the notices to stderr and exit with
            ``exit_code`` (the tool starts the turn); ``"stream"``: write one
            JSON line to stdout per delivery and keep waiting (the tool's
            plugin injects it); ``"command"``: run ``command`` with the text
            and keep waiting.
        exit_code: the exit code of an ``"exit"`` delivery.
        hook_event: the tool's hook event ``ssa install`` runs ``ssa hook <tool>
            --wait`` from (``None``: something else starts it).
        hook_fields: the extra fields of that hook handler.
        headless: arguments of the tool process that mark a run without a
            person (it waits for its hooks): the waiting hook delivers what is
            pending there and never waits.
        spawn: the prompt hook of a manager starts the waiting hook, detached,
            when the session has none.
        spawn_for_workers: with ``spawn``, a worker's prompt hook starts one too
            (it waits for sent messages only).
        inbox_sends: ``ssa send`` leaves messages in the inbox for the waiting
            hook (the command needs the session's own environment), instead of
            running ``command`` itself.
        mid_turn_event: a hook event ``ssa install`` also runs the prompt hook
            from, whose context reaches the model mid-turn; with
            ``mid_turn_fields`` as its extra fields.
        command: ``(tool pid, session id, text) -> argv`` for ``"command"``.
    """

    __slots__ = ("command", "delivery", "event", "exit_code", "headless", "hook_event",
                 "hook_fields", "inbox_sends", "mid_turn_event", "mid_turn_fields", "spawn",
                 "spawn_for_workers")

    def __init__(self, event: str, delivery: Literal["exit", "stream", "command"],
                 exit_code: int = 0, hook_event: str | None = None,
                 hook_fields: tuple[tuple[str, object], ...] = (),
                 headless: tuple[str, ...] = (), spawn: bool = False,
                 spawn_for_workers: bool = False, inbox_sends: bool = False,
                 mid_turn_event: str | None = None,
                 mid_turn_fields: tuple[tuple[str, object], ...] = (),
                 command: Callable[[int, str, str], list[str]] | None = None) -> None:
        self.event = event
        self.delivery = delivery
        self.exit_code = exit_code
        self.hook_event = hook_event
        self.hook_fields = hook_fields
        self.headless = headless
        self.spawn = spawn
        self.spawn_for_workers = spawn_for_workers
        self.inbox_sends = inbox_sends
        self.mid_turn_event = mid_turn_event
        self.mid_turn_fields = mid_turn_fields
        self.command = command


WAIT_TIMEOUT_S = 2_147_483
"""The waiting hook's ``timeout`` (seconds, about 24.8 days: the largest whose milliseconds
fit a 32-bit timer). Claude Code kills a hook at its timeout, and re-arms it only at the
next turn's end."""
