"""Where the signal log lives by default, and the one rule for a SQLite path given instead.

Standard library only, cheap to import (``ssa hook``'s cold path uses it).

The rule (every entry point: ``Gateway.open``/``AsyncGateway.open``, ``ssa
mcp --db``, the command line's ``--db`` and ``$SSA_DB``, ``ssa hook --db``,
``ssa install --db``): the database file is created when missing; of its
directories, the default location's are created whole (they are ours, as
XDG's state directory is), while for a path given only the file's own
folder is made, and only when that folder's parent exists (``mkdir``
without ``-p``). A mistyped path therefore fails with one line instead of
leaving a directory tree (or a ``hooks/`` folder) where nobody looks; a
fresh per-project folder (``--db .ssa/state.sqlite``) still works.
"""

from __future__ import annotations

import os
import re
import stat

TYPE_CHECKING = False  # neither typing nor pathlib is loaded here: ssa hook's start-up
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "default_state_file",
    "default_state_path",
    "folders_to_create",
    "foreign_owner",
    "sqlite_location_problem",
    "utf8_problem",
]


def default_state_file() -> str:
    """The embedded default database path as a string (what :func:`default_state_path` gives).

    ``$SSA_STATE_DIR/state.sqlite``, else ``$XDG_STATE_HOME/ssa/state.sqlite``,
    else ``~/.local/state/ssa/state.sqlite``. A leading ``~`` of either
    variable is the home directory (a tool's settings ``env`` block or a
    ``.env`` file does not expand it); a relative ``$XDG_STATE_HOME`` is
    ignored, as the XDG specification says; a relative ``$SSA_STATE_DIR`` is
    kept, and :func:`sqlite_location_problem` refuses it. Pure apart from
    reading the environment; any thread; never blocks. For the hook's cold
    path, which loads no :mod:`pathlib` (about 4 ms of its start-up, issue 33).
    """
    given = os.environ.get("SSA_STATE_DIR")
    if given:
        return os.path.join(os.path.expanduser(given), "state.sqlite")
    xdg = os.path.expanduser(os.environ.get("XDG_STATE_HOME", ""))
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "ssa", "state.sqlite")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "ssa", "state.sqlite")


def default_state_path() -> Path:
    """The embedded default database path (``api-contract.md``, ``Gateway.open``).

    ``$SSA_STATE_DIR/state.sqlite``, else ``$XDG_STATE_HOME/ssa/state.sqlite``,
    else ``~/.local/state/ssa/state.sqlite``, as :func:`default_state_file` reads
    them (``~`` expanded, a relative ``$XDG_STATE_HOME`` ignored). Pure apart from
    reading the environment; any thread; never blocks.
    """
    from pathlib import Path  # noqa: PLC0415 - the hook's cold path asks default_state_file

    return Path(default_state_file())


def _is_default(path: str) -> bool:
    """Whether ``path`` is :func:`default_state_file` (spelled the same once absolute)."""
    return os.path.abspath(path) == os.path.abspath(default_state_file())


def _missing_folders(path: str) -> list[str]:
    """``path``'s missing ancestor directories, nearest first (``stat`` calls only)."""
    missing: list[str] = []
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(folder) and folder != os.path.dirname(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    return missing


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/")
"""A URL's scheme (two letters or more: ``C:/`` is a Windows drive)."""


SYSTEM_FOLDERS = ("/dev", "/proc", "/sys")
"""Pseudo-filesystem trees no database file (or its ``hooks/`` folder) belongs in."""


def _system_folder(folder: str) -> str | None:
    """The :data:`SYSTEM_FOLDERS` tree ``folder`` is in (its real path), or ``None`` (pure
    apart from resolving links)."""
    real = os.path.realpath(folder)
    for top in SYSTEM_FOLDERS:
        if real == top or real.startswith(top + "/"):
            return top
    return None


def utf8_problem(path: str | os.PathLike[str]) -> str | None:
    """Why SQLite cannot open ``path`` by name, when it holds bytes that are not UTF-8
    (``os.fsdecode`` keeps them as surrogates), or ``None``. The message shows them as
    U+FFFD, so it can be printed anywhere. Pure; never raises."""
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return (f"{shown} holds bytes that are not UTF-8, and SQLite opens only UTF-8 file "
                "names: give a path without them (--db or $SSA_DB)")
    return None


def sqlite_location_problem(path: str | os.PathLike[str]) -> str | None:
    """Why a signal log cannot be made or opened at SQLite path ``path``, or ``None``.

    Refused: an empty path, ``:memory:`` and ``file:`` names (the signal log
    is a file its readers and other processes share), a NUL, a name that is
    not UTF-8 (SQLite takes only UTF-8 names), a directory,
    something that is not a regular file (``/dev/null``, a FIFO), a file in
    ``/dev``, ``/proc`` or ``/sys`` (:data:`SYSTEM_FOLDERS`), a folder
    that exists but is no directory, the default location when a relative
    ``$SSA_STATE_DIR`` makes it relative, a path given (not the default)
    whose folder is missing together with that folder's parent, and, for a
    process running as root, a file or folder another user owns (sudo that
    keeps HOME: what root made there, that user could not open). The message
    starts with the path. Caller's thread; a few ``stat`` calls; never raises.
    """
    text = os.fspath(path)
    if text in ("", ":memory:") or (text.startswith("file:") and "://" not in text):
        return (f"{text!r} is no file path: the signal log is a file that its readers and "
                "other processes share; give a file path")
    if "\0" in text:
        return "the path holds a NUL character"
    not_utf8 = utf8_problem(text)
    if not_utf8 is not None:
        return not_utf8
    scheme = _SCHEME.match(text)
    if scheme is not None:  # postgresql:// is a URL, taken before this; C:/... is a path
        return (f"{text} looks like a {scheme.group(1)}: URL, which is not a database this "
                "takes: give a file path or a postgresql:// URL")
    if not os.path.isabs(default_state_file()) and _is_default(text):
        return (f"{text} is a relative path, from $SSA_STATE_DIR="
                f"{os.environ.get('SSA_STATE_DIR', '')!r}: give an absolute one (every tool "
                "runs its hooks in its own project's folder)")
    where = text
    try:
        st = os.stat(where)
    except OSError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        example = os.path.join(os.path.normpath(where), "state.sqlite")
        return f"{text} is a directory; give a database file, e.g. {example}"
    if st is not None and not stat.S_ISREG(st.st_mode):
        return f"{text} is not a regular file (a device, pipe or socket); give a database file"
    missing = _missing_folders(where)
    folder = os.path.dirname(os.path.abspath(where))
    system = _system_folder(folder)
    if system is not None:
        return (f"{text} is in {system}, a folder of the system's devices or state, not a "
                "place for files; give a database file in your own folders")
    if not missing and not os.path.isdir(folder):
        return f"{text}: {folder} is not a directory"
    if len(missing) > 1 and not _is_default(where):
        return (f"{text}: neither {missing[0]} nor its parent {missing[1]} exists (create "
                "them first: only the database's own folder is created, in a folder "
                "that exists)")
    if missing and not os.path.isdir(os.path.dirname(missing[-1])):
        return f"{text}: {os.path.dirname(missing[-1])} is not a directory"
    owner = _other_owner(where, missing)
    if owner is not None:
        return (f"{text} is in a folder of user {owner} while ssa runs as root: the files it "
                "made would be root's and that user's own hooks could not open them; run it "
                f"as that user (sudo -u '#{owner}' ...)")
    return None


def _other_owner(where: str, missing: list[str]) -> int | None:
    """The uid owning ``where`` (or its nearest existing folder) when this process is root
    and that owner is not; ``None`` otherwise (``stat`` calls only; never raises)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    existing = where if os.path.lexists(where) else (
        os.path.dirname(missing[-1]) if missing else os.path.dirname(os.path.abspath(where)))
    try:
        uid = os.stat(existing).st_uid
    except OSError:
        return None
    return uid if uid != 0 else None


def foreign_owner(path: str | os.PathLike[str]) -> int | None:
    """The uid of another user who owns ``path`` (or its nearest existing folder) when this
    process runs as root; ``None`` otherwise. What root would make there, that user could
    not open: a caller writes nothing there (``stat`` calls only; never raises)."""
    where = os.fspath(path)
    return _other_owner(where, _missing_folders(where))


def folders_to_create(path: str | os.PathLike[str]) -> list[str]:
    """The directories to create for ``path``, outermost first (see the module's rule);
    absolute paths.

    Call :func:`sqlite_location_problem` first: for a path it refuses, the
    answer means nothing. Caller's thread; ``stat`` calls only; never raises.
    """
    return list(reversed(_missing_folders(os.fspath(path))))
