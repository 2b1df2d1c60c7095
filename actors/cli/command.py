"""The ``ssa`` entry point: sends ``ssa hook`` down a path that loads almost nothing.

A prompt hook runs at every prompt a person submits, so ``ssa hook`` must
not pay for importing the command line's other commands (the gateway, the
actor runtime, msgspec): it is dispatched here, before :mod:`actors.cli.app` is
imported; so is ``ssa send``, whose latency a waiting session feels, and
``ssa mcp`` (with at most ``--db``), whose first answer a tool waits for
before every prompt. Every other command (and ``ssa mcp --help``) goes to
:func:`actors.cli.app.main`.

On these light paths the cyclic garbage collector is paused while the
command's modules load (the ``ssa`` script, :mod:`ssa_cli`, pauses it
before it imports this module), and what they made is then frozen out of
later collections (``gc.freeze``): the imports alone set off about 17
collections, 3-5 ms of a cold prompt hook on a regular install (issue 33),
and what they create lives as long as the process. Every other command
starts with the collector on.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ssa`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    Leaves the cyclic garbage collector on; a light path freezes the objects
    that exist once its modules are loaded (``gc.freeze``: meant for the
    ``ssa`` process, not for a caller that goes on afterwards). Main thread;
    blocks for the command's duration.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        import os  # noqa: PLC0415 - the light path

        gc.disable()
        try:
            from actors.agents.hook import main as hook_main  # noqa: PLC0415 - the light path
        finally:
            _loaded()
        return hook_main(args[1:], exit_now=os._exit)
    if args[:1] == ["mcp"] and (db := _mcp_db(args[1:])) is not None:
        gc.disable()
        try:
            from actors.agents.mcp_server import main as mcp_main  # noqa: PLC0415 - light path
        finally:
            _loaded()
        return mcp_main(db or None, err=sys.stderr)
    if args[:1] == ["send"]:
        gc.disable()
        try:
            from actors.agents.sendcli import main as send_main  # noqa: PLC0415 - light path
        finally:
            _loaded()
        return send_main(args[1:])
    gc.enable()  # the full command line: long-running commands among them, as ever
    from actors.cli.app import main as cli_main  # noqa: PLC0415 - every other command

    return cli_main(args)


def _loaded() -> None:
    """After a light path's imports: keep what they made out of every later collection (it
    lives as long as the process) and start collecting again."""
    gc.freeze()
    gc.enable()


def _mcp_db(rest: Sequence[str]) -> str | None:
    """The ``--db`` of ``ssa mcp`` arguments ``rest`` (``""``: none given), or ``None`` when
    they are anything else (``--help``, a mistake): the full parser answers those (pure)."""
    match list(rest):
        case []:
            return ""
        case ["--db", db] if db and not db.startswith("-"):
            return db
        case [option] if option.startswith("--db=") and len(option) > len("--db="):
            return option[len("--db="):]
    return None
