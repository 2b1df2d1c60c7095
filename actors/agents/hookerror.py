"""The last failures of ``ssa hook``, kept in one small private file for ``ssa doctor``.

A hook failure is one stderr line that most tools never show the person, so a
broken set-up would stay silent. Each failure is also written here:
``hooks/last-errors.json`` in the default state folder (``$SSA_STATE_DIR``,
else ``$XDG_STATE_HOME/ssa``, else ``~/.local/state/ssa``), whatever ``--db``
says (``ssa doctor`` finds it without knowing it). It keeps the newest
:data:`KEEP` records of ``{"at": epoch ms, "tool": name, "error": one line}``
(lines cut at :data:`MAX_LINE` characters): bounded whatever happens. The lines
are the hook's own messages (exception types, paths, reasons), never message
text. Written by rename, 0600; best effort: never raises.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from persistence.locations import default_state_path, foreign_owner

__all__ = ["ERRORS_ENV", "KEEP", "MAX_LINE", "errors_path", "note_error", "read_errors"]

KEEP = 5
"""How many failures the file keeps (the newest)."""
MAX_LINE = 400
"""The longest error line kept, in characters."""


ERRORS_ENV = "SSA_HOOK_ERRORS"
"""Names another file for the failures (test suites point it at a temporary folder)."""


def errors_path() -> Path:
    """Where the failures are kept: ``$SSA_HOOK_ERRORS``, else the default state folder's
    ``hooks/last-errors.json`` (pure apart from reading the environment)."""
    given = os.environ.get(ERRORS_ENV)
    if given:
        return Path(given)
    return default_state_path().parent / "hooks" / "last-errors.json"


def read_errors(path: Path | None = None) -> list[dict[str, Any]]:
    """The kept failures, oldest first (``[]`` when none or unreadable; never raises)."""
    try:
        value = json.loads((path or errors_path()).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(value, list):
        return []
    return [r for r in value if isinstance(r, dict) and isinstance(r.get("error"), str)]


def note_error(tool: str, line: str, *, now_ms: int | None = None,
               path: Path | None = None) -> None:
    """Add one failure (the hook's one stderr line) to the file. Caller's thread; blocks
    on a small read and write; never raises. As root in another user's folder (sudo that
    keeps HOME) nothing is written: a root-owned file there would lock that user out. Nor
    at a relative path: the hook runs in the project's folder, which is not ours."""
    target = path or errors_path()
    if not target.is_absolute() or foreign_owner(target) is not None:
        return  # relative (a relative $SSA_STATE_DIR): it would land in the project folder
    record = {"at": now_ms if now_ms is not None else time.time_ns() // 1_000_000,
              "tool": tool[:40], "error": line[:MAX_LINE]}
    with contextlib.suppress(OSError, ValueError):
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        records = [*read_errors(target), record][-KEEP:]
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(records, handle)
        os.replace(temporary, target)
