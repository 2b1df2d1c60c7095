"""``ssa hook <tool> --activity``: record where a session stands, as its tool's hook says.

Run by the hooks ``ssa install`` registers under the tool's activity events
(:mod:`actors.agents.activity`): a turn's end (``finished``, and the seed's
log-only ``run_completed``), a failed turn (``failed``, ``run_failed`` with
its outcome), a permission prompt (``waiting``/``permission``), an idle
prompt (``waiting``/``input``), the session's end (``finished``/``ended``). It is
recorded when the signal log knows the session or has a manager (a worker's
first turn often ends before its manager adopts it); otherwise it costs one
read-only look.

With ``--permission-wait MIN`` a permission wait also starts a detached timer
(``--activity-timer SINCE``): after ``MIN`` minutes, if the session still
waits since then, it records one ``worker_waiting`` event, which opens a
notice for the session's managers (the seed's one-notice rules) and wakes
them through their push path.

Prints nothing; never in the person's way (a failure is one stderr line,
kept for ``ssa doctor``). Main thread; blocks on the database (and, as the
timer, for the wait).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.agents.activity import ActivityRule, rule_for
from actors.agents.hookargs import URL_SCHEMES, HookArgs, location_of
from actors.agents.hookinput import HookInput, parse_hook_input
from actors.agents.tools import tool_named
from persistence import peek

__all__ = ["record_activity", "run_timer", "start_timer"]


def _wanted(location: str, key: str) -> bool:
    """Whether the signal log at ``location`` wants where ``key`` stands: it knows the
    session, or it has a manager (which adopts the session at its next prompt, often
    after this worker's first turn ended). One read-only look; a URL, or a file of
    another schema version, is asked through the gateway."""
    if location.startswith(URL_SCHEMES):
        return True
    if not Path(location).exists():
        return False  # no manager yet: workers alone make no database
    try:
        conn = peek.open_peek(location)
    except peek.PeekUnavailable:
        return True  # another schema version: the gateway migrates it and decides
    try:
        return peek.session_created_at(conn, key) is not None or bool(peek.roles(conn))
    finally:
        conn.close()


def record_activity(args: HookArgs, raw: bytes, *,
                    clock: Callable[[], int] | None = None,
                    spawn: Callable[[HookArgs, HookInput, int], None] | None = None) -> str | None:
    """Record what the hook input says about its session; returns the state recorded.

    Args:
        args: the command line (``--db``, ``--agent``, ``--permission-wait``).
        raw: the hook input.
        clock: epoch ms (tests); default the system clock.
        spawn: starts the permission-wait timer (tests); default :func:`start_timer`.

    Returns:
        The state recorded, or ``None``: no rule for this event, or a signal log
        that neither knows the session nor has a manager (or does not exist).

    Raises:
        HookInputError: the input is not the tool's.
        persistence.StorageError: the signal log failed.

    Main thread; blocks on the database.
    """
    tool = tool_named(args.tool)
    hook = parse_hook_input(args.tool, raw)
    rule = rule_for(tool.activity if tool is not None else (), hook.event,
                    hook.notification_type)
    if rule is None:
        return None
    key = f"agent:{args.agent}:{hook.source}:{hook.session_id}"
    location = location_of(args)
    if not _wanted(location, key):
        return None
    now = clock() if clock is not None else time.time_ns() // 1_000_000
    _write(location, key, hook, rule, now)
    if rule.state == "waiting" and rule.detail == "permission" and args.permission_wait > 0:
        (spawn or start_timer)(args, hook, now)
    return rule.state


def _write(location: str, key: str, hook: HookInput, rule: ActivityRule, now: int) -> None:
    from actors import Gateway, SessionStateEventInput  # noqa: PLC0415 - the warm path's cost

    with Gateway.open(location, monitor=False) as gw:
        if rule.run is not None:  # the turn's end: the seed's log-only kinds
            gw.record(SessionStateEventInput(
                session_key=key, kind="run_completed" if rule.run == "ok" else "run_failed",
                actor_type="system", summary=f"turn ended via {hook.source}"
                + ("" if rule.run == "ok" else f" ({rule.run})"),
                payload=None if rule.run == "ok" else {"outcome": rule.run},
                occurred_at=now,
                dedupe_key=f"run-end:{key}:{hook.turn_id or now}"))
        gw.note_activity(key, rule.state, detail=rule.detail, at=now,
                         restart=rule.state == "waiting" and _went_on(gw, key))


def start_timer(args: HookArgs, hook: HookInput, since: int) -> None:
    """Start the detached permission-wait timer of the wait that began at ``since``
    (epoch ms). Never raises: a timer that cannot start is one notice fewer."""
    import subprocess  # noqa: PLC0415 - only when a timer starts

    argv = [sys.executable, "-m", "actors", "hook", args.tool, "--activity-timer", str(since),
            "--permission-wait", f"{args.permission_wait:g}", "--agent", args.agent,
            *(["--db", args.db] if args.db else [])]
    data = json.dumps({"session_id": hook.session_id, "cwd": hook.cwd,
                       "hook_event_name": hook.event}).encode()
    try:
        process = subprocess.Popen(  # noqa: S603 - our own command line, no shell
            argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    except OSError:
        return
    assert process.stdin is not None
    with contextlib.suppress(OSError):
        process.stdin.write(data)
        process.stdin.close()
    process.returncode = 0  # never waited for: it outlives this process (no warning)


def run_timer(args: HookArgs, raw: bytes, *,
              sleep: Callable[[float], None] = time.sleep) -> bool:
    """The timer: wait ``--permission-wait`` minutes, then, if the session still waits for
    a permission answer since ``--activity-timer``, record one ``worker_waiting`` event.

    Returns:
        Whether it was recorded now (a repeat of the same wait is deduplicated: ``False``).

    Raises:
        HookInputError: the input is not the tool's.
        persistence.StorageError: the signal log failed.

    Main thread; blocks (sleeps) for the wait, then on the database.
    """
    since = args.activity_timer
    assert since is not None
    hook = parse_hook_input(args.tool, raw)
    key = f"agent:{args.agent}:{hook.source}:{hook.session_id}"
    sleep(args.permission_wait * 60.0)
    from actors import Gateway, SessionStateEventInput  # noqa: PLC0415 - after the wait

    with Gateway.open(location_of(args), monitor=False) as gw:
        activity = gw.activity(key)
        if activity is None or (activity.state, activity.detail, activity.since) != (
                "waiting", "permission", since):
            return False  # answered (busy again), or another state since
        waited_s = max(0, (time.time_ns() // 1_000_000 - since) // 1000)
        waited = f"{waited_s} s" if waited_s < 120 else f"{round(waited_s / 60)} min"
        head = gw.session_status(key).state_version
        recorded = gw.record(SessionStateEventInput(
            session_key=key, kind="worker_waiting", actor_type="system",
            summary=f"waiting for a permission answer for {waited} via {hook.source}",
            payload={"since": since}, dedupe_key=f"worker-waiting:{key}:{since}"))
        return recorded is not None and recorded.sequence > head  # a repeat returns the old


def _went_on(gw: Any, key: str) -> bool:
    """Whether the session went on since its stored state began (its transcript grew: a
    permission prompt was answered), so a wait noted now is a new one. Two reads."""
    now = gw.activity(key)  # already corrected by the transcript's growth
    return now is not None and now.state == "busy"
