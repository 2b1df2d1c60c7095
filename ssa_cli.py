"""The ``ssa`` console script: a Ctrl-C while the library is still importing exits quietly.

Importing :mod:`actors` takes a few tenths of a second; a ``KeyboardInterrupt``
in that window used to end in a traceback. This module imports nothing of
ours at import time, so the interrupt lands in :func:`main`'s ``try``.
"""

from __future__ import annotations

import gc

__all__ = ["main"]

INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells report it."""


def main() -> int:
    """Run ``ssa`` (:func:`actors.cli.command.main`); 130 after a Ctrl-C, with no traceback.

    ``actors.cli.command`` sends ``ssa hook`` down its light path and every other
    command to :func:`actors.cli.app.main`. The cyclic garbage collector is paused
    until the command's modules are loaded (:mod:`actors.cli.command` says why).
    Main thread; blocks for the command's whole run.
    """
    gc.disable()  # while modules load; actors.cli.command turns it on again (issue 33)
    try:
        from actors.cli.command import main as command_main  # noqa: PLC0415 - the point
    except KeyboardInterrupt:
        return INTERRUPTED
    try:
        return command_main()
    except KeyboardInterrupt:  # while a command was still importing its modules
        return INTERRUPTED
