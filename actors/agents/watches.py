"""``ssa watches``: list, add and remove the watches of a watcher (e.g. a manager agent).

``list`` shows who watches whom by readable names (:mod:`actors.agents.names`:
tool, session, project, role), then the keys to copy.

``ssa hook --scope list`` watches exactly what is added here; under the
default ``--scope project`` the hook also adds the project's other sessions
on its own (and adds back one removed here while it is in the project).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from actors.agents.hookrun import catalogs_for
from actors.agents.names import session_name, titles_of
from actors.agents.sessions import CwdCache, Found, StoreRow, find_sessions
from actors.errors import InvalidArgument
from actors.facade import validate as v
from persistence import peek

__all__ = ["run_watches"]


def _table(rows: list[tuple[str, str, int, int]], managers: dict[str, bool]) -> str:
    """The watches as an aligned table: readable names first, then the keys to copy."""
    found: dict[str, Found] = {}
    if rows:
        stores: dict[str, list[StoreRow]] = {}
        for session in find_sessions(catalogs_for(os.getcwd()), CwdCache(None), stores):
            found.setdefault(f"agent:main:{session.source}:{session.thread_id}", session)
    header = ("WATCHER", "TARGET", "SINCE", "PENDING", "WATCHER_KEY", "TARGET_KEY")
    titles = titles_of([key for w, t, _, _ in rows for key in (w, t)], found)
    lines = [header] + [
        (session_name(w, found, managers, titles), session_name(t, found, managers, titles),
         str(ls),
         "yes" if mt > ls else "no", w, t) for w, t, ls, mt in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    return "".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths,
                                                                       strict=False))
                   + "  " + line[-1] + "\n" for line in lines)


def run_watches(action: str, watcher: str | None, targets: list[str], location: Path | str,
                out: TextIO) -> int:
    """Run ``ssa watches list|add|remove``.

    Args:
        action: ``"list"``, ``"add"`` or ``"remove"``.
        watcher: the watcher key (``list``: optional filter).
        targets: the session keys to add or remove.
        location: the signal log (a SQLite path or a ``postgresql://`` URL).
        out: where the result lines go.

    Returns:
        The exit code: 0, or 1 when some target could not be added or removed
        (each said on ``out``).

    Raises:
        InvalidSessionKey, InvalidArgument: a bad key, or no target given.
        SessionStateError, StorageError: the database cannot be opened.

    Main thread; blocks on the database.
    """
    from actors import Gateway  # noqa: PLC0415 - a command's own import

    if watcher is not None:
        v.check_key(watcher, "WATCHER")
    for target in targets:
        v.check_key(target, "TARGET")
    if action != "list" and (watcher is None or not targets):
        raise InvalidArgument(f"ssa watches {action} needs a WATCHER and at least one TARGET")
    with Gateway.open(location, monitor=False) as gw:
        if action == "list":
            with gw.read_pool.connection() as conn:
                rows = peek.watches(conn, watcher)
                managers = peek.roles(conn)
            out.write(_table(rows, managers))
            return 0
        assert watcher is not None
        failed = 0
        with gw.read_pool.connection() as conn:
            known = peek.session_keys(conn)
        for target in targets:
            if action == "add":
                ok = gw.watch(watcher, target)
                note = ("" if target in known
                        else " (no such session yet: a typo? ssa list shows them)")
                out.write(f"{'watching' if ok else 'not watching (self, or not agent-qualified)'}"
                          f" {target}{note if ok else ''}\n")
            else:
                ok = gw.unwatch(watcher, target)
                out.write(f"{'removed' if ok else 'was not watching'} {target}\n")
            failed += not ok
        return 1 if failed else 0
