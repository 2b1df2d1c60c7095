"""How ``ssa hook <tool> --wait`` hands a notice to a running session: one entry per tool.

A tool whose session can be woken from outside has a :class:`PushPath` here;
the generic wait loop (:mod:`actors.agents.hookwait`) names no tool. Adding
a tool's push path is one entry.

* **Claude Code** runs ``ssa hook claude-code --wait`` as a ``Stop`` command
  hook with ``"asyncRewake": true``: it runs in the background once a turn
  ends; when it exits 2, Claude Code shows its stderr to the model as a
  system notification and starts a turn, even when the session is idle.
  It is armed again at the end of that turn.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

__all__ = ["PUSH", "WAIT_TIMEOUT_S", "PushPath"]


class PushPath(NamedTuple):
    """How a waiting hook delivers to one tool's session.

    Attributes:
        event: the hook event whose output form the notices take
            (:func:`actors.agents.hookinput.render_output`).
        stream: where the notices are written.
        exit_code: the process exits with this code right after a delivery
            was acknowledged (``None``: it keeps waiting for the next one).
    """

    event: str
    stream: Literal["stdout", "stderr"]
    exit_code: int | None
    hook_event: str | None = None
    hook_fields: tuple[tuple[str, object], ...] = ()
    headless: tuple[str, ...] = ()
    """``hook_event``: the tool's hook event ``ssa install`` runs ``ssa hook <tool> --wait``
    from (``None``: the tool's plugin or extension starts it); ``hook_fields``: the
    extra fields of that hook handler; ``headless``: arguments of the tool process
    that mark a run without a person (it waits for its hooks, so the waiting hook
    delivers what is pending and never waits there)."""


WAIT_TIMEOUT_S = 2_147_483
"""The waiting hook's ``timeout`` (seconds, about 24.8 days: the largest whose milliseconds
fit a 32-bit timer). Claude Code kills a hook at its timeout, and re-arms it only at the
next turn's end."""

PUSH: dict[str, PushPath] = {
    "claude-code": PushPath(event="Stop", stream="stderr", exit_code=2, hook_event="Stop",
                            hook_fields=(("asyncRewake", True), ("timeout", WAIT_TIMEOUT_S)),
                            headless=("-p", "--print")),
}
"""The tools whose sessions ``ssa hook --wait`` can wake, by ``ssa hook`` tool name."""
