"""A re-install updates only what is ours and keeps what the person changed.

What lives here: pure functions that merge what ``ssa install`` wants into what a
previous install left and the person then edited:

* a command line (``ssa hook <tool> ...``, ``ssa mcp ...``): its head (the ``ssa``
  path and subcommand) is ours; of our options, ``--no-wake`` and ``--wait`` are
  always ours, ``--db`` and ``--scope`` only when this install was given them
  (:attr:`~actors.agents.installsetup.Setup.explicit`), else the file's value
  stays (the README's ``--scope all`` edit survives ``ssa install`` run again);
  anything else the person added stays where it is;
* an entry (a hook handler, an MCP server): ``command``/``args`` are merged as
  above; one of our other keys the person changed keeps their value; keys the
  person added stay; both are reported (a table such as ``env`` by its keys' names).
* a handler a re-install adds beside ours the person edited: it takes their edits
  too (:func:`handler_edits`, :func:`carry_argv`): the ``VAR=value`` they put in
  front and their values of :data:`CARRIED` not given on this command line, so
  all the tool's hooks keep using one database and one scope.

Each merge also returns the lines to tell the person (what was kept). Pure; any thread.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ALWAYS_OURS", "ARITY", "CARRIED", "HandlerEdits", "carry_argv", "env_prefix",
           "handler_edits", "join_command", "merge_argv", "merge_entry"]

ARITY: Mapping[str, int] = {"--db": 1, "--scope": 1, "--no-wake": 0, "--wait": 0,
                            "--activity": 0, "--permission-wait": 1}
"""The options install writes, with how many values each takes."""

ALWAYS_OURS = frozenset({"--no-wake", "--wait", "--activity"})
"""Options every install sets (from ``--no-wake`` and the hook's role), given or not."""


CARRIED: Mapping[str, str | None] = {"--db": None, "--scope": None,
                                     "--permission-wait": "--activity"}
"""The options a person's edit of one of our hooks carries to the hooks a re-install adds,
each with the option the added hook's command line must have for it (``None``: every
hook): the database and scope every hook shares, the permission wait only where the
activity is recorded."""


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def env_prefix(argv: list[str]) -> list[str]:
    """The leading shell variable assignments of a command line (``["SSA_DB=/x"]`` of
    ``SSA_DB=/x ssa hook claude-code``; empty when none). Pure."""
    count = 0
    while count < len(argv) and _ASSIGNMENT.match(argv[count]):
        count += 1
    return argv[:count]


def join_command(argv: list[str]) -> str:
    """``argv`` as one shell command line: like :func:`shlex.join`, but a leading
    ``NAME=value`` is written ``NAME=<quoted value>`` so the shell still takes it as an
    assignment (``shlex.join`` would quote it whole into a command name). Pure."""
    prefix = env_prefix(argv)
    assignments = [f"{token.split('=', 1)[0]}={shlex.quote(token.split('=', 1)[1])}"
                   if token.split("=", 1)[1] else token for token in prefix]
    return " ".join([*assignments, shlex.join(argv[len(prefix):])]).strip()


def _options(tail: list[str]) -> list[tuple[str | None, list[str]]]:
    """``tail`` as ``(option, tokens)`` runs: an option of :data:`ARITY` with its
    values (``--x=v`` kept as one token), or ``(None, [token])`` for anything else."""
    runs: list[tuple[str | None, list[str]]] = []
    i = 0
    while i < len(tail):
        token = tail[i]
        name = token.split("=", 1)[0] if token.startswith("--") else token
        if name in ARITY:
            width = 1 if "=" in token else 1 + ARITY[name]
            runs.append((name, tail[i:i + width]))
            i += width
        else:
            runs.append((None, [token]))
            i += 1
    return runs


def merge_argv(existing: list[str], wanted: list[str], head: int,
               explicit: frozenset[str]) -> tuple[list[str], list[str]]:
    """The command line to install where ``existing`` (ours, perhaps hand-edited) is.

    Args:
        existing: the installed argument vector (leading ``VAR=value`` assignments a
            person put in front stay, in front).
        wanted: what this install would write afresh.
        head: how many leading tokens are ours whole (``[ssa, "hook", tool]``: 3).
        explicit: the options given on this command line (they replace the file's).

    Returns:
        ``(argv, kept)``: the merged vector (``existing`` itself when nothing changes)
        and the options kept from the file against this install's defaults
        (e.g. ``["--scope all"]``).
    """
    prefix = env_prefix(existing)  # the person's VAR=value in front stays theirs
    if prefix:
        rest, kept_here = merge_argv(existing[len(prefix):], wanted, head, explicit)
        whole = prefix + rest
        return (existing if whole == existing else whole), [*map(_shown, prefix), *kept_here]
    owned = ALWAYS_OURS | explicit
    wanted_runs = {name: tokens for name, tokens in _options(wanted[head:])
                   if name is not None}
    placed: set[str] = set()
    tail: list[str] = []
    kept: list[str] = []
    for name, tokens in _options(existing[head:]):
        if name is None or name not in owned:
            tail += tokens
            if name is not None:
                kept.append(" ".join(tokens))
            continue
        if name in wanted_runs and name not in placed:
            tail += wanted_runs[name]  # in the place the file had it
            placed.add(name)
    for name, tokens in wanted_runs.items():
        if name not in placed and name in owned:
            tail += tokens
    merged = wanted[:head] + tail
    return (existing if merged == existing else merged), kept


def _shown(assignment: str) -> str:
    """A ``NAME=value`` the person put in front of our command, as a note names it: the
    name only (``SSA_DB=…``; the value may be a password, e.g. ``PGPASSWORD``)."""
    return assignment.split("=", 1)[0] + "=…"


@dataclass(frozen=True)
class HandlerEdits:
    """What a person changed in our hook handlers that every hook of the tool should share.

    ``prefix``: the ``VAR=value`` assignments in front of the command (of the first
    handler that has any); ``options``: each option of :data:`CARRIED` with its tokens
    as the file has it (``("--scope", ("--scope", "all"))``; the first handler's that
    has it wins), in the order found.
    """

    prefix: tuple[str, ...] = ()
    options: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __bool__(self) -> bool:
        """Whether there is anything to carry."""
        return bool(self.prefix or self.options)


def handler_edits(argvs: Iterable[list[str]], head: int) -> HandlerEdits:
    """The edits of our existing handlers a re-install carries to the ones it adds.

    Args:
        argvs: the command lines of our handlers in the file, as argument vectors, in
            the order the tool's events are looked at.
        head: how many tokens after the prefix are ours whole (``[ssa, "hook", tool]``).

    Returns:
        The first prefix found and the first value of each :data:`CARRIED` option (an
        empty :class:`HandlerEdits` when none of them was edited). Pure.
    """
    prefix: list[str] = []
    options: dict[str, tuple[str, ...]] = {}
    for argv in argvs:
        found = env_prefix(argv)
        if found and not prefix:
            prefix = found
        for name, tokens in _options(argv[len(found) + head:]):
            if name is not None and name in CARRIED and name not in options:
                options[name] = tuple(tokens)
    return HandlerEdits(tuple(prefix), tuple(options.items()))


def carry_argv(edits: HandlerEdits, wanted: list[str], head: int,
               explicit: frozenset[str]) -> tuple[list[str], list[str]]:
    """The command line of a handler a re-install adds, with the person's ``edits`` of
    the tool's other handlers of ours carried over.

    Args:
        edits: what :func:`handler_edits` found.
        wanted: what this install would write afresh for the new handler.
        head: how many leading tokens of ``wanted`` are ours whole.
        explicit: the options given on this command line (they win over the edits).

    Returns:
        ``(argv, carried)``: ``wanted`` with the prefix in front and each edited option
        (but those given on the command line, and those :data:`CARRIED` keeps to other
        handlers) in place; and the edits carried, as the note names them. Pure.
    """
    present = {name for name, _tokens in _options(wanted[head:]) if name is not None}
    options = [tokens for name, tokens in edits.options if name not in explicit
               and (CARRIED[name] is None or CARRIED[name] in present)]
    if not edits.prefix and not options:
        return wanted, []
    model = [*edits.prefix, *wanted[:head], *(token for run in options for token in run)]
    return merge_argv(model, wanted, head, explicit)


def merge_entry(existing: Mapping[str, Any], wanted: Mapping[str, Any],
                argv_of: Mapping[str, int], explicit: frozenset[str],
                replace: frozenset[str] = frozenset()) -> tuple[dict[str, Any], list[str]]:
    """The keys of an installed entry (hook handler, MCP server) to set, and what was kept.

    Args:
        existing: the entry in the file (ours: it runs our command).
        wanted: the entry this install would write afresh.
        argv_of: the keys that hold a command line, with the length of their head
            (a hook's ``command`` string, an MCP ``args`` list, OpenCode's ``command``
            list); for ``args`` the head is 1 (``["mcp"]``).
        explicit: the options given on this command line.
        replace: keys that are ours whole (an MCP entry's ``command``: the ssa path).

    Returns:
        ``(changes, kept)``: each key whose value must change (only ours, never a key
        the person added), and lines naming what the person's file keeps: their value
        of one of our keys, and each key they added (an ``env`` by its variables'
        names, never their values).
    """
    changes: dict[str, Any] = {}
    kept: list[str] = []
    for key, value in wanted.items():
        current = existing.get(key)
        if key in argv_of:
            is_text = isinstance(value, str)
            try:
                old_argv = shlex.split(current) if isinstance(current, str) else current
            except ValueError:
                old_argv = None
            new_argv = shlex.split(value) if is_text else value
            if not isinstance(old_argv, list) or not all(isinstance(t, str) for t in old_argv):
                changes[key] = value
                continue
            merged, kept_options = merge_argv(old_argv, new_argv, argv_of[key], explicit)
            kept += kept_options
            if merged != old_argv:
                changes[key] = join_command(merged) if is_text else merged
        elif key not in existing or (key in replace and current != value):
            changes[key] = value
        elif current != value:
            kept.append(_described(key, current, ours=True))
    kept += [_described(key, current, ours=False) for key, current in existing.items()
             if key not in wanted]
    return changes, kept


def _described(key: str, value: Any, *, ours: bool) -> str:
    """A kept value as the note names it: one of our keys, or a number or truth value,
    with its value (``timeout 25``, ``startup_timeout_sec 30``); a table by its keys'
    names (``env (SSA_DB)``: an env's values may be passwords); any other value of a
    key the person added by the key's name only (it may be a token). Pure."""
    if isinstance(value, Mapping):
        return f"{key} ({_short(', '.join(str(k) for k in value), quote=False)})" \
            if value else key
    shown = ours or isinstance(value, int | float)
    return f"{key} {_short(value)}" if shown else key


def _short(value: Any, *, quote: bool = True) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if quote else str(value)
    return text if len(text) <= 40 else text[:37] + "..."
