"""``ssa doctor``: what is set up, what is broken, and how to fix each (issue 33 item 4).

A broken set-up is otherwise silent: a hook that fails prints one stderr line
most tools never show. The doctor looks, read-only:

* for each coding agent: whether ``ssa install`` put our hook into the files
  the install would change (found by what the hook runs: ``<ssa> hook
  <tool>``), whether that ``ssa`` still exists and runs, and the ``--db`` the
  hook passes (:func:`actors.agents.dbcheck.db_problem`);
* each signal log those name (or the default one): where it is, its schema,
  its health (``PRAGMA quick_check``), the managers and their open notices,
  and the processes hosting watchers (a lease that lapsed without a release
  is an ``ssa watch`` or gateway that died);
* the last failures of ``ssa hook`` (:mod:`actors.agents.hookerror`).

Each :class:`Finding` is ``ok``, ``note`` or ``problem``, with the fix for a
problem. The whole check runs on the main thread and blocks on file reads,
one ``ssa --help`` per installed hook (at most :data:`RUN_TIMEOUT_S` each) and
the databases' reads; it never writes.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

import apsw
import msgspec

from actors.agents.dbcheck import db_problem
from actors.agents.hookerror import errors_path, read_errors
from actors.agents.install import resolve_ssa
from actors.agents.installplan import plan
from actors.agents.installsetup import Setup
from actors.agents.tools import TOOLS
from persistence import APPLICATION_ID, SCHEMA_VERSION, is_url, peek, redact_url, url_has_password
from persistence.locations import default_state_path

__all__ = ["RUN_TIMEOUT_S", "Finding", "HookFound", "find_hooks", "run_doctor"]

logger = logging.getLogger(__name__)

RUN_TIMEOUT_S = 10.0
"""How long the doctor lets one installed ``ssa`` answer ``--help``, in seconds."""

Level = Literal["ok", "note", "problem"]


@dataclass(frozen=True)
class Finding:
    """One thing the doctor found.

    Attributes:
        level: ``"ok"``, ``"note"`` (worth knowing) or ``"problem"``.
        what: what was looked at (``"claude-code hook"``, ``"database"``, ...).
        text: what was found, one line.
        fix: how to fix a problem (``""`` otherwise).
    """

    level: Level
    what: str
    text: str
    fix: str = ""


@dataclass(frozen=True)
class HookFound:
    """An installed hook command: the ``ssa`` it runs, its ``--db`` and the file it is in."""

    ssa: str
    db: str | None
    file: Path


_SHELL = r"(?P<ssa>[^\s\"'\\,\[]+)\s+hook\s+{tool}\b(?P<rest>[^\"\n]*)"
_ARRAY = r"\"(?P<ssa>[^\"]+)\"\s*,\s*\"hook\"\s*,\s*\"{tool}\"(?P<rest>[^\]]*)"
_DB_SHELL = re.compile(r"--db\s+('(?:[^']*)'|\"(?:[^\"]*)\"|\S+)")
_DB_ARRAY = re.compile(r"\"--db\"\s*,\s*\"([^\"]*)\"")


def find_hooks(tool: str, text: str, file: Path) -> list[HookFound]:
    """The hook commands of ``tool`` in a settings file's ``text`` (shell command lines,
    or a plugin's argument array). Pure."""
    found: list[HookFound] = []
    for pattern, db_pattern in ((_SHELL, _DB_SHELL), (_ARRAY, _DB_ARRAY)):
        for match in re.finditer(pattern.format(tool=re.escape(tool)), text):
            db = db_pattern.search(match.group("rest"))
            value = db.group(1).strip("'\"") if db else None
            found.append(HookFound(ssa=match.group("ssa"), db=value, file=file))
    return found


def _tool_files(tool: str, home: Path, env: dict[str, str]) -> tuple[list[Path], bool]:
    """The files ``ssa install <tool>`` would change (user scope and this project), and
    whether the tool looks used here (a folder of its user-scope files exists)."""
    files: list[Path] = []
    used = False
    for project in (None, Path.cwd()):
        setup = Setup(ssa="ssa", db=None, project=project, home=home, env=env)
        try:
            ops = plan(tool, setup, install=True).ops
        except Exception as exc:
            logger.debug("no install plan for %s: %s", tool, exc)
            continue
        files.extend(op.path for op in ops if not op.quiet)
        used = used or (project is None and any(
            op.path.parent.is_dir() and op.path.parent != home for op in ops if not op.quiet))
    return list(dict.fromkeys(files)), used


def _runs(ssa: str) -> str | None:
    """Why the hook's ``ssa`` cannot run (``None``: ``ssa --help`` answered 0)."""
    path = shutil.which(ssa) if os.sep not in ssa else ssa
    if path is None or not Path(path).exists():
        return f"{ssa} does not exist (uninstalled, or its virtual environment was removed)"
    if not os.access(path, os.X_OK):
        return f"{path} is not executable"
    try:
        done = subprocess.run([path, "--help"], capture_output=True,  # noqa: S603 - the hook's own command
                              timeout=RUN_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{path} --help failed: {type(exc).__name__}"
    if done.returncode != 0:
        last = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
        return f"{path} --help exits {done.returncode}: {last[-1] if last else ''}"
    return None


def _tools(home: Path, env: dict[str, str]) -> tuple[list[Finding], list[str]]:
    """Findings per tool, and every ``--db`` its hooks name (``""``: the default)."""
    findings: list[Finding] = []
    dbs: list[str] = []
    for name in TOOLS:
        hooks: list[HookFound] = []
        files, used = _tool_files(name, home, env)
        for file in files:
            if file.is_file():
                try:
                    hooks += find_hooks(name, file.read_text(encoding="utf-8", errors="replace"),
                                        file)
                except OSError:
                    continue
        what = f"{name} hook"
        if not hooks:
            if used:
                findings.append(Finding("problem", what, "not installed (the tool's settings "
                                        "folder exists, with no ssa hook in it)",
                                        f"ssa install {name}"))
            continue
        for hook in dict.fromkeys(hooks):
            why = _runs(hook.ssa)
            if why is not None:
                findings.append(Finding("problem", what, f"in {hook.file}: {why}",
                                        f"ssa install {name} (it writes this ssa's path: "
                                        f"{resolve_ssa(None)})"))
            else:
                findings.append(Finding("ok", what, f"in {hook.file}, runs {hook.ssa}"))
            dbs.append(hook.db or "")
    return findings, list(dict.fromkeys(dbs))


def _database(location: str) -> list[Finding]:
    """What the doctor finds in one signal log (read-only)."""
    what = f"database {location}"
    problem = db_problem(location)
    if problem is not None:
        return [Finding("problem", what, problem,
                        "move it aside (the next hook makes a new one) or restore a backup; "
                        "or install with another --db")]
    if not is_url(location) and not Path(location).is_file():
        return [Finding("note", what, "not made yet: the first hook run or ssa watch makes it")]
    if is_url(location):
        return [Finding("ok", what, "the server answers")]
    try:
        conn = peek.open_peek(location)
    except Exception as exc:
        return [Finding("problem", what, f"cannot be opened: {type(exc).__name__}: {exc}",
                        "check its permissions, or move it aside")]
    try:
        return _inside(conn, what)
    finally:
        conn.close()


def _inside(conn: apsw.Connection, what: str) -> list[Finding]:
    findings: list[Finding] = []
    app_id, version = int(conn.pragma("application_id")), int(conn.pragma("user_version"))
    if app_id not in (0, APPLICATION_ID):
        return [Finding("problem", what, "not a session-state database", "use another --db")]
    problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check(5)")]
    if problems != ["ok"]:
        return [Finding("problem", what, f"damaged: {problems[0]}",
                        "stop every process using it; restore a backup or move it aside "
                        "(the next hook makes a new one)")]
    older = f" (older than {SCHEMA_VERSION}: the next gateway migrates it)" \
        if version < SCHEMA_VERSION else ""
    findings.append(Finding("ok", what, f"healthy, schema {version}{older}"))
    managers = peek.roles(conn) if version == SCHEMA_VERSION else {}
    if not managers:
        findings.append(Finding("note", "managers", "none: every session is a worker",
                                "run ssa manage inside the session that should be told"))
    for key, wake in sorted(managers.items()):
        count = len(peek.pending(conn, key))
        findings.append(Finding("ok", "managers", f"{key}: {count} open notice(s)"
                                + ("" if wake else " (not woken: --no-wake)")))
    now = time.time_ns() // 1_000_000
    for watcher, host, expires in conn.execute(
            "SELECT watcher_session_key, host_id, expires_at FROM session_hosts"
            " ORDER BY watcher_session_key"):
        if int(expires) > now:
            findings.append(Finding("ok", "ssa watch", f"{watcher} is hosted by {host}"))
        else:
            findings.append(Finding(
                "problem", "ssa watch",
                f"{watcher} was hosted by {host}, which stopped without closing "
                f"(its lease lapsed {(now - int(expires)) // 1000} s ago)",
                f"start ssa watch --watcher {watcher} again, or ignore it (its notices "
                "stay queued and show at the next drain)"))
    return findings


def _errors() -> list[Finding]:
    records = read_errors()
    if not records:
        return [Finding("ok", "hook failures", "none kept")]
    last = records[-1]
    at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(int(last.get("at", 0)) / 1000))
    return [Finding("problem", "hook failures",
                    f"{len(records)} kept in {errors_path()}; the last, {at} "
                    f"({last.get('tool')}): {last['error']}",
                    "fix what the line says, then delete that file")]


def _redacted(finding: Finding, locations: list[str]) -> Finding:
    """``finding`` with each secret-bearing location in its texts shown redacted (pure)."""
    secret = [(loc, redact_url(loc)) for loc in locations if redact_url(loc) != loc]
    if not secret:
        return finding

    def clean(text: str) -> str:
        for raw, shown in secret:
            text = text.replace(raw, shown)
        return text

    return Finding(finding.level, clean(finding.what), clean(finding.text), clean(finding.fix))


def run_doctor(db: str | None, *, as_json: bool, out: TextIO,
               home: Path | None = None, env: dict[str, str] | None = None) -> int:
    """Check everything and write the findings; returns 1 when one is a problem, else 0.

    Args:
        db: the signal log to check besides those the hooks name (``None``: the
            default, ``$SSA_DB`` when set).
        as_json: one JSON object per finding instead of lines.
        out: where the findings go.
        home, env: stand for ``Path.home()`` and ``os.environ`` (tests).

    Main thread; blocks as the module docstring says.
    """
    home = home if home is not None else Path.home()
    env = dict(env if env is not None else os.environ)
    findings, hook_dbs = _tools(home, env)
    default = db or env.get("SSA_DB") or str(default_state_path())
    locations = list(dict.fromkeys([default, *(d or default for d in hook_dbs)]))
    for location in locations:
        if url_has_password(location):
            findings.append(Finding(
                "problem", f"database {redact_url(location)}",
                "its URL holds a password: every local user sees it in ps while a hook or "
                "ssa mcp runs, and it is written in settings files",
                "leave it out of the URL: PGPASSWORD, ~/.pgpass or a service file "
                "(?service=NAME), then ssa install with the URL without it"))
        findings += _database(location)
    findings += _errors()
    findings = [_redacted(f, locations) for f in findings]  # output people paste in reports
    if as_json:
        encoder = msgspec.json.Encoder()
        out.write("".join(encoder.encode(f.__dict__).decode() + "\n" for f in findings))
    else:
        for f in findings:
            mark = {"ok": "ok     ", "note": "note   ", "problem": "PROBLEM"}[f.level]
            out.write(f"{mark} {f.what}: {f.text}\n")
            if f.fix:
                out.write(f"        fix: {f.fix}\n")
    return 1 if any(f.level == "problem" for f in findings) else 0
