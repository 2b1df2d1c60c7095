"""Where a worker stands, from its tool's own hooks: the rules (issue 33 item 2).

Each tool lists which of its hook events say what about its session
(:attr:`~actors.agents.tools.base.AgentTool.activity`), e.g. Claude Code's
``Stop`` (its turn ended: ``finished``, and the turn's ``run_completed``) or its
``Notification`` of kind ``permission_prompt`` (``waiting`` for a permission
answer). ``ssa install`` registers ``ssa hook <tool> --activity`` under those
events; :mod:`actors.agents.activityrun` records what they say.

Standard library only (read by ``ssa hook``'s cold path); pure.
"""

from __future__ import annotations

from persistence.record import Record

__all__ = ["ActivityRule", "rule_for"]


class ActivityRule(Record):
    """What one hook event of a tool says about its session.

    Attributes:
        event: the hook event, or ``"Event:kind"`` for a kind of it (Claude
            Code's ``Notification:permission_prompt``).
        state: the worker state it means (``waiting``, ``finished``, ``failed``;
            ``busy`` is read from the transcript growing).
        detail: ``permission``/``input`` for a wait, ``ended`` for a session's end,
            the outcome for a failure.
        run: the turn's end it records: ``"ok"`` a ``run_completed`` event,
            ``"error"`` (or another outcome) a ``run_failed`` one; ``None``: no event.
    """

    __slots__ = ("detail", "event", "run", "state")

    def __init__(self, event: str, state: str, detail: str | None = None,
                 run: str | None = None) -> None:
        self.event = event
        self.state = state
        self.detail = detail
        self.run = run


def rule_for(rules: tuple[ActivityRule, ...], event: str,
             kind: str | None) -> ActivityRule | None:
    """The rule of ``event`` (of ``kind``, when the rule names one), or ``None`` (pure)."""
    for rule in rules:
        name, _, wanted = rule.event.partition(":")
        if name == event and (not wanted or wanted == kind):
            return rule
    return None
