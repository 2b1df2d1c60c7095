"""``ssa manage``: make the session it runs in a manager, or a worker again.

After ``ssa install`` every session is a *worker*: it is never notified and
never woken. A person makes one session the manager in one step from inside
it: they ask the agent (which runs ``ssa manage`` with its shell tool, or
calls the MCP tool ``manage``) or run it themselves from the tool's shell
escape (Claude Code's ``!``). No key is copied: the session is the one
whose prompt hook last ran in the tool process this command runs under
(:mod:`actors.agents.caller`); ``--session KEY`` names another.

A manager watches the other sessions of its project (the hook adds them at
its next run), sessions it sent to with ``watch`` and sessions it spawned;
with wakes on (the default), a notice that opens for it wakes it.
``ssa manage --off`` makes it a worker again and drops its watches.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TextIO

from actors.agents.caller import find_caller
from actors.agents.hookargs import URL_SCHEMES
from actors.errors import InvalidArgument, SessionStateError
from actors.facade import validate as v
from actors.upstream.sources import find_source
from persistence import peek
from persistence.locations import default_state_path

__all__ = ["resolve_self", "run_manage", "set_role", "state_dir_of"]



def state_dir_of(location: Path | str) -> Path:
    """The directory of our private files for ``location`` (a URL: the default's). Pure."""
    text = str(location)
    return default_state_path().parent if text.startswith(URL_SCHEMES) else Path(text).parent


def resolve_self(location: Path | str, session: str | None, *,
                 option: str = "--session KEY") -> str:
    """The session key ``ssa manage`` (or ``ssa send``, or an MCP tool) acts for.

    Args:
        location: the signal log (where the hook's caller records are).
        session: an explicit key, or ``None`` to find the caller's own.
        option: how the caller names a key explicitly, for the message
            (``"--session KEY"``, ``"--from KEY"``, an MCP argument).

    Returns:
        The session key.

    Raises:
        InvalidSessionKey: ``session`` is not a valid key.
        SessionStateError: no key given and this process does not run inside
            a coding-agent session whose ``ssa hook`` ran (the message says
            what to do).

    Caller's thread; blocks on a few small file reads.
    """
    if session is not None:
        v.check_key(session, option.removesuffix(" KEY"))
        return session
    key = find_caller(state_dir_of(location), os.getpid())
    if key is None:
        raise SessionStateError(
            "this command does not run inside a coding-agent session whose ssa hook has run "
            "(run it from the agent's shell tool, or from the tool's shell escape, after "
            f"one prompt); or name the session with {option} (ssa list shows the keys the "
            "signal log knows)")
    return key


def set_role(gw: Any, key: str, *, off: bool, wake: bool) -> bool:
    """Make ``key`` a manager (its session entry made when missing, so its watches count
    from now) or, with ``off``, a worker. Returns whether anything changed.

    ``gw``: an open :class:`actors.Gateway`. Raises what
    :meth:`actors.Gateway.set_role` raises. Caller's thread; blocks on a read and writes.
    """
    if not off:
        with gw.read_pool.connection() as conn:
            known = peek.session_created_at(conn, key) is not None
        if not known:
            gw.create_session(key)  # its hook adopts its transcript at the next run
    return bool(gw.set_role(key, "worker" if off else "manager", wake=wake))


def run_manage(location: Path | str, session: str | None, *, off: bool, wake: bool,
               out: TextIO, err: TextIO | None = None) -> int:
    """Run ``ssa manage``; returns the exit code (0).

    Args:
        location: the signal log (a SQLite path or a ``postgresql://`` URL).
        session: ``--session``, or ``None`` for the caller's own session.
        off: make it a worker again.
        wake: for a manager, whether notices wake it (``--no-wake``: ``False``).
        out: where the one result line goes.
        err: where a note goes (an unknown session); default ``sys.stderr``.

    Raises:
        SessionStateError, InvalidSessionKey, StorageError: as :func:`resolve_self`
            and :meth:`actors.Gateway.set_role` raise.

    Main thread; blocks on the database.
    """
    from actors import Gateway  # noqa: PLC0415 - a command's own import (start-up cost)

    err = err if err is not None else sys.stderr
    key = resolve_self(location, session)
    parts = key.split(":", 3)
    if len(parts) < 4 or parts[0] != "agent" or find_source(parts[2]) is None:
        raise InvalidArgument(f"--session {key!r} is not a coding-agent session's key "
                              "(agent:<agent id>:<tool>:<session id>; ssa list shows the keys)")
    if off and not wake:
        raise InvalidArgument("--no-wake goes with making a manager, not with --off")
    with Gateway.open(location, monitor=False) as gw:
        with gw.read_pool.connection() as conn:
            known = peek.session_created_at(conn, key) is not None
        changed = set_role(gw, key, off=off, wake=wake)
    if not known and session is not None:  # a key typed by hand: a typo?
        err.write(f"ssa: note: the signal log has not seen session {key} yet (ssa list "
                  "shows the sessions it knows; check the key if no such session runs); it "
                  "takes this role from its next prompt\n")
    if off:
        out.write(f"{key} is a worker{' again' if changed else ''}: it is not notified "
                  "or woken, and its watches were dropped.\n")
    else:
        out.write(f"{key} is {'now ' if changed else ''}a manager: it is told when someone "
                  "else steps into the other sessions of its project, sessions it sent to "
                  "with watch, and sessions it started"
                  + (", and woken when it is idle" if wake else " (no wakes)") + ".\n")
    return 0
