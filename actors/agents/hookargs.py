"""``ssa hook``'s command line, parsed without argparse on the cold path.

What lives here: :func:`parse` (the command lines the installers write,
in a few microseconds), :func:`parse_slowly` (argparse, imported only for
``--help`` and mistakes: it costs a few milliseconds of a cold start), and
:func:`location_of` (the signal log the arguments name).
"""

from __future__ import annotations

import math
import os

from actors.agents.hookbudget import say
from actors.agents.hookinput import TOOLS
from persistence.locations import default_state_file
from persistence.record import Record

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import Any, TextIO

__all__ = [
    "DEFAULT_TIMEOUT_S", "MAX_TIMEOUT_S", "SCOPES", "URL_SCHEMES", "HookArgs", "location_of",
    "parse",
    "parse_slowly", "timeout_problem",
]

DEFAULT_TIMEOUT_S = 8.0
"""The hook's whole time budget, in seconds (Claude Code waits 30 s; our OpenCode
plugin and Pi extension wait 10 s)."""
MAX_TIMEOUT_S = 600.0
"""The longest ``--timeout``: a prompt hook that may take longer stands in the person's way
(and a budget past the platform's timer range broke the watchdog thread)."""
SCOPES = ("project", "all", "list")
URL_SCHEMES = ("postgres://", "postgresql://")
"""A ``--db`` that starts so is a PostgreSQL URL (not peeked at: no APSW file)."""


class _UsageError(Exception):
    """A command line ``ssa hook`` does not understand (argparse's message)."""


def _parser() -> Any:
    import argparse  # noqa: PLC0415 - only for --help and mistakes (start-up cost)

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # no usage dump: one line, then exit 0
            raise _UsageError(message)

    parser = Parser(
        prog="ssa hook", description="Print the pending notices of a coding agent's session "
        "for its next turn (run by the tool's prompt hook; always exits 0).")
    parser.add_argument("tool", choices=tuple(TOOLS))
    parser.add_argument("--db", help="the signal log: a SQLite file or a postgresql:// URL "
                        "(default: $SSA_DB, else ssa watch's default database)")
    parser.add_argument("--scope", choices=SCOPES, default="project",
                        help="which sessions the manager watches: the other sessions of its "
                        "project (default), all sessions, or only those added with "
                        "'ssa watches add'")
    parser.add_argument("--agent", default="main", help="agent id of the session keys "
                        "(default: main, as ssa watch)")
    parser.add_argument("--wait", action="store_true",
                        help="stay beside the idle session until it ends: deliver the first "
                        "notice that opens for it through the tool's push path and exit "
                        "with that path's code (run by the hooks ssa install writes)")
    parser.add_argument("--no-wake", action="store_true",
                        help="never wait beside the session nor start a waiting hook "
                        "(ssa install --no-wake)")
    parser.add_argument("--activity", action="store_true",
                        help="say where this session stands (run by the tool's turn-end, "
                        "permission and session-end hooks ssa install writes); prints nothing")
    parser.add_argument("--permission-wait", type=float, default=0.0, metavar="MIN",
                        help="with --activity: a wait for a permission answer longer than "
                        "MIN minutes opens a notice for the session's managers (0: never)")
    parser.add_argument("--activity-timer", type=int, default=None, metavar="SINCE",
                        help=argparse.SUPPRESS)
    parser.add_argument("--excerpt", default=None, metavar="CHARS",
                        help="under each notice, show the first CHARS characters of each "
                        "turn a person typed, read from the tool's transcript at delivery "
                        f"(never stored; 0: off, the default; more is cut to {MAX_EXCERPT}, "
                        "anything else is off; default from $SSA_HOOK_EXCERPT)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help=f"the whole run's budget in seconds (default {DEFAULT_TIMEOUT_S}; "
                        f"0: none; at most {MAX_TIMEOUT_S:g})")
    return parser


class HookArgs(Record):
    """``ssa hook``'s command line: the tool and ``--db``, ``--scope``, ``--agent``,
    ``--timeout``, ``--wait``, ``--no-wake`` and ``--excerpt``.

    ``timeout`` is in seconds (``0``: no budget); with ``wait`` it bounds each
    check, not the wait. ``excerpt``: characters of each typed turn shown under
    a notice (``0``: none); ``activity``: ``--activity``, record where the
    session stands (:mod:`actors.agents.activityrun`); ``permission_wait``:
    ``--permission-wait``, minutes of waiting for a permission answer before a
    notice; ``activity_timer``: the detached timer of one wait (epoch ms it
    began; internal). A value (:class:`~persistence.record.Record`).
    """

    __slots__ = ("activity", "activity_timer", "agent", "db", "excerpt", "no_wake",
                 "permission_wait", "scope", "timeout", "tool", "wait")

    def __init__(self, tool: str, db: str | None = None, scope: str = "project",
                 agent: str = "main", timeout: float = DEFAULT_TIMEOUT_S, wait: bool = False,
                 no_wake: bool = False, excerpt: int = 0, activity: bool = False,
                 permission_wait: float = 0.0, activity_timer: int | None = None) -> None:
        self.tool = tool
        self.db = db
        self.scope = scope
        self.agent = agent
        self.timeout = timeout
        self.wait = wait
        self.no_wake = no_wake
        self.excerpt = excerpt
        self.activity = activity
        self.permission_wait = permission_wait
        self.activity_timer = activity_timer


MAX_EXCERPT = 2000
"""The longest ``--excerpt`` (characters per typed turn)."""

_OPTIONS = {"--db": "db", "--scope": "scope", "--agent": "agent", "--timeout": "timeout",
            "--excerpt": "excerpt", "--permission-wait": "permission_wait",
            "--activity-timer": "activity_timer"}


def excerpt_of(value: object) -> int:
    """``--excerpt``'s value (``$SSA_HOOK_EXCERPT`` when ``None``) as characters: more than
    :data:`MAX_EXCERPT` is cut to it, and anything that is no whole number from 0 is 0 (no
    excerpt). A bad setting never silences the notices themselves (pure but the
    environment)."""
    if value is None:
        value = os.environ.get("SSA_HOOK_EXCERPT", "0") or "0"
    try:
        number = int(str(value).strip())
    except ValueError:
        return 0
    return min(number, MAX_EXCERPT) if number > 0 else 0


def parse(argv: list[str]) -> HookArgs | None:
    """The command line the installers write, parsed without argparse; ``None``: anything else.

    ``ssa hook`` starts at every prompt, and argparse alone costs a large
    part of a cold start; ``--help`` and mistakes go through argparse.
    """
    tool: str | None = None
    values: dict[str, Any] = {}
    words = iter(argv)
    for word in words:
        name, eq, inline = word.partition("=")
        if word == "--wait":
            values["wait"] = True
        elif word == "--activity":
            values["activity"] = True
        elif word == "--no-wake":
            values["no_wake"] = True
        elif name in _OPTIONS:
            value = inline if eq else next(words, None)
            if value is None:
                return None
            values[_OPTIONS[name]] = value
        elif word.startswith("-") or tool is not None:
            return None
        else:
            tool = word
    if tool not in TOOLS or values.get("scope", "project") not in SCOPES \
            or values.get("db") == "":
        return None  # argparse's path says why
    try:
        values["timeout"] = float(values.get("timeout", DEFAULT_TIMEOUT_S))
    except ValueError:
        return None
    if timeout_problem(values["timeout"]) is not None:
        return None  # argparse's path says why
    values["excerpt"] = excerpt_of(values.get("excerpt"))
    try:
        values["permission_wait"] = float(values.get("permission_wait", 0.0))
        if "activity_timer" in values:
            values["activity_timer"] = int(values["activity_timer"])
    except ValueError:
        return None
    if permission_wait_problem(values["permission_wait"]) is not None:
        return None  # argparse's path says why
    return HookArgs(tool=tool, **values)


MAX_PERMISSION_WAIT_MIN = 1440.0
"""The longest ``--permission-wait``, in minutes (a day)."""


def permission_wait_problem(minutes: float) -> str | None:
    """Why ``minutes`` is no ``--permission-wait`` (one line), or ``None`` (pure)."""
    if math.isfinite(minutes) and 0 <= minutes <= MAX_PERMISSION_WAIT_MIN:
        return None
    return (f"--permission-wait must be a number of minutes from 0 (never) to "
            f"{MAX_PERMISSION_WAIT_MIN:g}")


def timeout_problem(seconds: float) -> str | None:
    """Why ``seconds`` is no ``--timeout`` (one line), or ``None`` (pure).

    A budget is finite, from 0 (no budget: for embedding, e.g. under
    pytest-timeout, which owns SIGALRM) to :data:`MAX_TIMEOUT_S`.
    """
    if math.isfinite(seconds) and 0 <= seconds <= MAX_TIMEOUT_S:
        return None
    return (f"--timeout must be a number of seconds from 0 (no budget) to {MAX_TIMEOUT_S:g}, "
            f"not {seconds!r}")


def parse_slowly(argv: list[str], out: TextIO, err: TextIO) -> HookArgs | None:
    """argparse for ``--help`` and mistakes; ``None`` (after one stderr line) to stop."""
    parser = _parser()
    try:
        namespace = parser.parse_args(argv)
    except SystemExit:  # --help: its text is on stdout
        return None
    except _UsageError as exc:
        say(err, f"bad command line ({exc}): ssa hook {' '.join(argv)} (see ssa hook --help)")
        return None
    problem = timeout_problem(namespace.timeout)
    if namespace.db is not None and not namespace.db.strip():
        problem = "--db must not be empty: give a database file or a postgresql:// URL"
    problem = problem or permission_wait_problem(namespace.permission_wait)
    excerpt = excerpt_of(namespace.excerpt)
    if problem is not None:
        say(err, problem)
        return None
    return HookArgs(tool=namespace.tool, db=namespace.db, scope=namespace.scope,
                    agent=namespace.agent, timeout=namespace.timeout, wait=namespace.wait,
                    no_wake=namespace.no_wake, excerpt=excerpt,
                    activity=namespace.activity, permission_wait=namespace.permission_wait,
                    activity_timer=namespace.activity_timer)


def location_of(args: HookArgs) -> str:
    """The signal log: ``--db``, else ``$SSA_DB``, else ``ssa watch``'s default (pure but env).

    A leading ``~`` is expanded (a plugin runs the hook without a shell, which would
    have expanded it); a URL is returned as given.
    """
    given = args.db or os.environ.get("SSA_DB")
    if not given:
        return default_state_file()
    return given if given.startswith(URL_SCHEMES) else os.path.expanduser(given)
