"""``ssa hook <tool>``: put a manager's pending notices into its next turn.

Each coding agent runs this at every prompt a person submits (Claude Code
and Codex: a ``UserPromptSubmit`` / ``SessionStart`` command hook;
OpenCode: the plugin's ``experimental.chat.system.transform``; Pi: the
extension's ``before_agent_start``). The session whose turn it is, the
*manager*, is the watcher ``agent:main:<source>:<session id>`` (the key
``ssa watch`` gives adopted sessions). One run:

1. reads the tool's hook input (:mod:`actors.agents.hookinput`) and
   records which session the tool process runs (:mod:`actors.agents.caller`,
   for ``ssa manage`` and ``ssa mcp``); a session that is not a manager
   (``ssa manage``; every session starts as a worker) stops here: a worker
   is never notified;
2. lists every tool's sessions (:mod:`actors.agents.sessions`) and picks
   those the manager watches: by default every other session of its
   project (:mod:`actors.agents.project`), ``--scope all`` every session,
   ``--scope list`` only the watches added with ``ssa watches add``;
3. peeks at the signal log (:mod:`persistence.peek`, no actor): a notice
   to deliver, a session to adopt or to start watching, or a watched
   transcript that changed while no ``ssa watch`` holds its scan lease is
   *work*; with none, it exits having printed nothing (the cold path);
4. otherwise opens a :class:`~actors.Gateway` (``monitor=False``), adopts,
   watches and scans what changed, prints the pending notices with a
   summary of their changes (:mod:`actors.agents.context`) in the tool's
   output form, flushes, and only then acknowledges exactly the notices it
   printed (``drain(only=...)``): a hook killed before that shows them
   again at the next turn, never loses them and never acknowledges one
   unseen.

The command line is :mod:`actors.agents.hookargs`, the plan
:mod:`actors.agents.hookplan`, the budget :mod:`actors.agents.hookbudget`
(all cold path: the standard library and APSW), the warm path
:mod:`actors.agents.hookwarm`.

It never stands in the person's way: any failure (no database, locked,
corrupt, a wrong stdin, the time budget spent) prints nothing on stdout,
one line on stderr, and exits 0, within ``--timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Sequence

from actors.agents.hookargs import HookArgs, parse, parse_slowly
from actors.agents.hookbudget import HookTimeout, deadline, say, watchdog
from actors.agents.hookinput import MAX_INPUT_BYTES, HookInputError
from actors.agents.hookrun import catalogs_for, check, prepare
from persistence.lazylog import get_logger

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import IO, TextIO

__all__ = ["catalogs_for", "main"]

logger = get_logger(__name__)


def main(argv: Sequence[str], *, stdin: IO[bytes] | None = None,
         stdout: TextIO | None = None, stderr: TextIO | None = None,
         exit_now: Callable[[int], None] | None = None) -> int:
    """Run ``ssa hook`` with ``argv`` (the words after ``hook``).

    Args:
        argv: e.g. ``["claude-code"]`` or ``["codex", "--db", "/tmp/x.sqlite"]``.
        stdin: the hook input (default: ``sys.stdin.buffer``).
        stdout: where the context goes (default: ``sys.stdout``).
        stderr: where the one line about a failure goes (default: ``sys.stderr``).
        exit_now: ``(code) -> None`` ends the process at once (``ssa hook``
            passes ``os._exit``): called right after the notices printed were
            acknowledged, so a tool that kills the hook then finds it gone,
            and by a watchdog :data:`~actors.agents.hookbudget.HARD_STOP_S`
            after a budget that a blocked call outlived.
            ``None`` (tests): return normally.

    Returns:
        ``0`` for a prompt hook: also for a failure, and for a command line
        it does not understand (a tool takes exit 2 as "block the prompt");
        the reason is one line on stderr. ``--help`` prints the usage. With
        ``--wait``: the tool's push path's exit code after a delivery
        (:mod:`actors.agents.push`; Claude Code: 2, which wakes the session),
        else 0.

    Main thread (it arms SIGALRM for the budget); blocks for at most
    ``--timeout`` seconds, plus :data:`~actors.agents.hookbudget.HARD_STOP_S` with
    ``exit_now``; with ``--wait`` until a delivery or the session's end.
    """
    if stdout is None:  # what the tool reads is UTF-8 JSON or text, whatever the locale
        with contextlib.suppress(AttributeError, ValueError):
            sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    # A closed stdin (sys.stdin is None) is an empty input: one line, exit 0.
    source = stdin if stdin is not None else (
        sys.stdin.buffer if sys.stdin is not None else io.BytesIO())
    args = parse(list(argv))
    if args is None:
        args = parse_slowly(list(argv), out, err)
        if args is None:
            return 0
    if args.activity or args.activity_timer is not None:
        raw = source.read(MAX_INPUT_BYTES + 1)
        _activity(args, raw, err)
        if not args.wait or args.activity_timer is not None:
            return 0
        source = io.BytesIO(raw)  # the waiting hook of the same event reads it again
    if args.wait:
        from actors.agents.hookwait import wait  # noqa: PLC0415 - the wait mode's own path

        return wait(args, source, out, err, exit_now)
    timer = watchdog(args.timeout, err, exit_now)
    try:
        with deadline(args.timeout):
            run = prepare(args, source.read(MAX_INPUT_BYTES + 1))
            check(run, args, out, exit_now)
    except (HookTimeout, HookInputError) as exc:
        _failed(err, args.tool, str(exc))
    except Exception as exc:  # never in the person's way
        logger.debug("ssa hook failed", exc_info=True)
        _failed(err, args.tool, f"{type(exc).__name__}: {exc}")
    finally:
        if timer is not None:
            timer.cancel()
    return 0


def _activity(args: HookArgs, raw: bytes, err: TextIO) -> None:
    """``--activity`` (or its timer): record where the session stands; a failure is one
    stderr line, kept for ``ssa doctor``, never in the person's way."""
    from actors.agents.activityrun import record_activity, run_timer  # noqa: PLC0415

    try:
        if args.activity_timer is not None:
            run_timer(args, raw)
        else:
            with deadline(args.timeout):
                record_activity(args, raw)
    except (HookTimeout, HookInputError) as exc:
        _failed(err, args.tool, str(exc))
    except Exception as exc:  # never in the person's way
        logger.debug("ssa hook --activity failed", exc_info=True)
        _failed(err, args.tool, f"{type(exc).__name__}: {exc}")


def _failed(err: TextIO, tool: str, line: str) -> None:
    """Say a failure on stderr and keep it for ``ssa doctor`` (never raises)."""
    say(err, line)
    from actors.agents.hookerror import note_error  # noqa: PLC0415 - only on a failure

    note_error(tool, line.splitlines()[0] if line else "failed")
