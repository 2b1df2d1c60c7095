"""Scripted actions of issue 32 every CLI tool runs the same way: a copy whose original
is elsewhere or deleted, and each fixed prompt a command (a click) sends.

Test code, not a test: the agents tests and :mod:`tests.harness.drift` call these
with a :class:`~tests.harness.session.Harness`. Each returns an :class:`Outcome`
(the comparison with the action log, and what the test must also check) and
asserts nothing itself, so the drift script can print a failing figure instead of
stopping. Every function blocks for the turns it drives (their timeouts are the
harness's).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from tests.harness.compare import Comparison, compare
from tests.harness.script import Text
from tests.harness.session import Harness
from tests.harness.tools import AgentTool, DecidedRow, tool_named

__all__ = ["HOW", "Outcome", "copy_without_original", "fixed_prompt",
           "session_copy_without_original"]

HOW = ("moved", "deleted")
"""What happens to the original transcript before the copy is classified."""


@dataclass(frozen=True)
class Outcome:
    """What one scripted action left.

    Attributes:
        name: the scripted action (``fork/moved``, ``fixed_prompt /init``...).
        result: the comparison of the decided rows with the action log.
        copies: rows of the new transcript that hold the earlier prompt (copies; for
            a fixed prompt, the rows holding its marker).
        typed: how many typed actions the comparison must find.
        copied: whether the tool writes copies there (Codex 0.171.0's fork names its
            original, ``forked_from_id``, and copies nothing).
    """

    name: str
    result: Comparison
    copies: tuple[DecidedRow, ...]
    typed: int
    copied: bool = True

    @property
    def exact(self) -> bool:
        """Precision = recall = 1.0, every typed action found, nothing unseen, and the
        copies (or the fixed prompt's rows) there and none of them typed."""
        r = self.result
        return ((r.precision, r.recall) == (1.0, 1.0) and not r.unseen
                and len(r.true_positives) == self.typed and bool(self.copies) == self.copied
                and not any(row.human for row in self.copies))

    def line(self) -> str:
        """The comparison's first line, with the copies' reasons (for the drift report)."""
        reasons = sorted({row.reason for row in self.copies})
        return (f"{self.result.report().splitlines()[0]}; {len(self.copies)} "
                f"{'copy' if 'fixed' not in self.name else 'prompt'} rows "
                f"({', '.join(reasons) or 'none'})")

    def report(self) -> str:
        """The comparison's whole report, then the copies (an assertion message)."""
        return "\n".join([self.name, self.result.report(), "copies:",
                          *(f"  {r.path.name}:{r.unit} {r.kind} -> human={r.human} "
                            f"({r.reason})" for r in self.copies)])


def copy_without_original(harness: Harness, tool: str | AgentTool, how: str,
                          variant: str | None = None) -> Outcome:
    """One typed prompt, the tool's continuation ``variant`` into a new transcript (its
    profile's :meth:`~tests.harness.tools.AgentTool.continuations`; default the first)
    and one typed prompt there; then the original transcript is moved elsewhere (``moved``) or
    deleted (``deleted``) and every transcript left is decided.

    Ground truth: the prompt typed in the new transcript counts once; the copy of the
    earlier prompt there never does; when moved, the earlier prompt counts once in
    the moved original (when deleted, its row is gone and so is its action).

    Raises:
        ValueError: ``how`` is not in :data:`HOW`, or the tool has no such continuation.
        AssertionError: the tool wrote no new transcript (it appended instead).
        TimeoutError: a turn did not complete.
    """
    if how not in HOW:
        raise ValueError(f"how must be one of {HOW}, not {how!r}")
    profile = tool_named(tool)
    nonce = secrets.token_hex(4)
    home = harness.home(f"home-{how}-{nonce}")
    agent = harness.start(profile, home=home,
                          project=harness.project(f"project-{how}-{nonce}", git=True))
    earlier = f"typed before the copy {nonce}"
    agent.script(Text(f"one {nonce}"))
    agent.prompt(earlier)
    (original,) = [p for p in agent.transcripts() if not _subagent(p)]
    ways = profile.continuations(original)
    if not ways or (variant is not None and variant not in ways):
        raise ValueError(f"{profile.name} has no continuation {variant or ''} into a new "
                         "transcript")
    variant = variant or next(iter(ways))
    kind, args = ways[variant]
    new = harness.reopen(agent, kind, args)
    new.script(Text(f"two {nonce}"))
    new.prompt(f"typed after the {kind} {nonce}")
    new.quit()
    added = [p for p in new.transcripts() if p != original]
    assert added, f"{profile.name} {' '.join(args)} wrote no new transcript"
    kept: list[Path] = []
    if how == "moved":
        kept.append(profile.move_elsewhere(home, original))
    else:
        original.unlink()
    rows = [row for path in dict.fromkeys([*new.transcripts(), *kept])
            for row in profile.decide(path, new.project)]
    mine = {new.name} if how == "deleted" else {agent.name, new.name}
    actions = [a for a in harness.log.actions(tool=profile.name) if a.agent in mine]
    copies = tuple(r for r in rows if r.path in added and r.holds(earlier))
    return Outcome(f"{variant}/{how}", compare(rows, actions), copies,
                   2 if how == "moved" else 1, profile.continuation_copies)


def session_copy_without_original(harness: Harness, tool: str | AgentTool,
                                  variant: str | None = None) -> Outcome:
    """For a store holding many sessions (OpenCode's database): one typed prompt, the
    continuation ``variant`` of that session into a new session of the store
    (:meth:`~tests.harness.tools.AgentTool.session_continuations`; default the first)
    and one typed prompt there; then the original session is deleted with the tool's
    own command and the project's sessions are decided. (A session in a store has no
    folder to be moved to: ``deleted`` is the one case.)

    Ground truth: the prompt typed in the new session counts once, the copy of the
    earlier prompt never does.

    Raises:
        ValueError: the tool has no such continuation.
        TimeoutError: a turn, or the new TUI's history, did not come in time.
    """
    profile = tool_named(tool)
    nonce = secrets.token_hex(4)
    home = harness.home(f"home-session-{nonce}")
    project = harness.project(f"project-session-{nonce}", git=True)
    agent = harness.start(profile, home=home, project=project)
    earlier = f"typed before the copy {nonce}"
    agent.script(Text(f"one {nonce}"))
    agent.prompt(earlier)
    (store,) = agent.transcripts()
    (first,) = profile.sessions(store, project)  # type: ignore[attr-defined]
    ways = profile.session_continuations(first)
    if not ways or (variant is not None and variant not in ways):
        raise ValueError(f"{profile.name} has no session continuation {variant or ''}")
    variant = variant or next(iter(ways))
    kind, args = ways[variant]
    new = harness.reopen(agent, kind, args, wait_ready=False)
    new.pane.wait_text(earlier, profile.startup_timeout_s)  # keys typed before go astray
    new.wait_idle()
    new.script(Text(f"two {nonce}"))
    new.prompt(f"typed after the {kind} {nonce}")
    new.quit()
    profile.delete_session(harness.install, home, new.model, first)
    rows = profile.decide(store, project)
    assert not any(r.session == first for r in rows), f"{first} was not deleted"
    actions = [a for a in harness.log.actions(tool=profile.name) if a.agent == new.name]
    copies = tuple(r for r in rows if r.holds(earlier))
    return Outcome(f"{variant}/deleted", compare(rows, actions), copies, 1,
                   profile.continuation_copies)


def fixed_prompt(harness: Harness, tool: str | AgentTool, command: str) -> Outcome:
    """A typed prompt, ``command`` chosen as a person does (it sends the tool's fixed
    prompt: a :data:`~tests.harness.actions.FIXED_PROMPT` action, not ``human``), and
    another typed prompt; every row decided.

    Ground truth: each typed prompt counts once (the two, and any the command needs
    first: Codex's plan popup follows a typed planning prompt); no row holding the
    fixed prompt's marker (the profile's
    :attr:`~tests.harness.tools.AgentTool.fixed_prompts`) does.

    Raises:
        KeyError: the profile lists no such command.
        TimeoutError: the fixed prompt's request or a turn did not come in time.
    """
    profile = tool_named(tool)
    marker = profile.fixed_prompts[command]
    nonce = secrets.token_hex(4)
    agent = harness.start(profile, home=harness.home(f"home-fixed-{nonce}"),
                          project=harness.project(f"project-fixed-{nonce}", git=True))
    agent.script(Text(f"one {nonce}"))
    agent.prompt(f"typed before {command} {nonce}")
    profile.send_fixed_prompt(agent, command, Text(f"fixed answer {nonce}"))
    agent.wait_request(marker)
    agent.wait_turn()
    agent.script(Text(f"two {nonce}"))
    agent.prompt(f"typed after {command} {nonce}")
    rows = agent.decided_rows()
    agent.quit()
    copies = tuple(r for r in rows if r.holds(marker))
    actions = harness.log.actions(agent=agent.name)
    return Outcome(f"fixed_prompt {command}", compare(rows, actions), copies,
                   sum(1 for a in actions if a.human))


def _subagent(path: Path) -> bool:
    """A sub-agent's transcript (``subagents/``), not the session's own."""
    return "subagents" in path.parts
