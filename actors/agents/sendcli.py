"""``ssa send``'s command line, on a light path (the ``ssa`` entry point sends it here).

A send's latency is what a waiting session feels, so ``ssa send`` does not
import the rest of the command line (the gateway, the actor runtime):
argparse, then :func:`actors.agents.send.run_send`, which imports the engine
only for ``--watch``, after the text went in.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from actors.agents.hookargs import URL_SCHEMES
from actors.agents.send import run_send
from actors.errors import SessionStateError
from persistence.errors import StorageError
from persistence.locations import default_state_path

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """``ssa send``'s parser (also what ``ssa --help`` lists)."""
    result = argparse.ArgumentParser(
        prog="ssa send", description="Deliver text into another running coding-agent "
        "session: an idle one takes a turn with it, a busy one gets it at its next turn.")
    result.add_argument("target", metavar="TARGET", help="the receiving session's key")
    result.add_argument("text", metavar="TEXT", help="the message (at most 16 KiB)")
    result.add_argument("--watch", action="store_true",
                        help="then watch the session that received it")
    result.add_argument("--from", dest="sender", metavar="KEY",
                        help="the sending session's key (default: the session this runs in)")
    result.add_argument("--db", metavar="PATH_OR_URL",
                        help="SQLite file or postgresql:// URL (default: $SSA_DB, else the "
                        "default file)")
    return result


def main(argv: Sequence[str]) -> int:
    """Run ``ssa send`` with ``argv`` (the words after ``send``); returns the exit code.

    0: delivered or queued; 1: refused, no live session, or an error (one line
    on stderr); 2: a command line argparse refuses. Main thread; blocks up to
    about five seconds (the delivery), more with ``--watch`` (one write).
    """
    args = parser().parse_args(list(argv))
    location = args.db or os.environ.get("SSA_DB") or str(default_state_path())
    if not location.startswith(URL_SCHEMES) and args.db is not None \
            and not Path(location).parent.is_dir():
        sys.stderr.write(f"ssa: --db {location}: directory {Path(location).parent} "
                         "does not exist\n")
        return 1
    try:
        return run_send(location, args.target, args.text, sender=args.sender,
                        watch=args.watch, out=sys.stdout)
    except (SessionStateError, StorageError, OSError) as exc:
        sys.stderr.write(f"ssa: {exc}\n")
        return 1
