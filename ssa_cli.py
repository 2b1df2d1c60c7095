"""The ``ssa`` console script: a Ctrl-C while the library is still importing exits quietly.

Importing :mod:`actors` takes a few tenths of a second; a ``KeyboardInterrupt``
in that window used to end in a traceback. This module imports nothing of
ours at import time, so the interrupt lands in :func:`main`'s ``try``.
"""

from __future__ import annotations

__all__ = ["main"]

INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells report it."""


def main() -> int:
    """Run ``ssa`` (:func:`actors.cli.main`); 130 after a Ctrl-C, with no traceback.

    Main thread; blocks for the command's whole run.
    """
    try:
        from actors.cli import main as cli_main  # noqa: PLC0415 - the slow import is the point
    except KeyboardInterrupt:
        return INTERRUPTED
    return cli_main()
