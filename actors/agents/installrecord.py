"""What ``ssa install`` created in a person's settings files, so uninstall takes only that.

A settings file can hold an empty ``"hooks": {}`` or ``"mcp": { // none yet }`` the
person wrote, or be a file that existed before (even as ``{}``). Nothing in the file
tells that apart from what an install created, so the install writes it down:
``installed.json`` in ssa's state directory (``$SSA_STATE_DIR``, else
``$XDG_STATE_HOME/ssa``, else ``~/.local/state/ssa``; 0600, ours whole), one entry
per settings file: whether the install created the file, which containers
(object keys from the root, e.g. ``["hooks", "Stop"]``) it created, and the text of
each empty container that was there and got our first entry (``"Stop": [ ]``), so
uninstall gives back those bytes, not ``[]`` (a blank file, empty or only whitespace,
is its root, ``[]``, with the file's text: it comes back blank, not ``{}``). Uninstall then
removes an emptied container only if an install created it, and an emptied file only
if an install created it; a file with no entry (an install by an older ssa, a record
in another state directory, a damaged record) keeps its emptied containers and stays
as ``{}``: what is not known to be ours is never removed.

:class:`InstallRecord` is read when the plan is made and collects what the
transforms note; its own :meth:`InstallRecord.transform` (the plan's last file
operation, under the folder's lock) merges those notes into the file as it is then.
The transforms run on the caller's thread; nothing here blocks but the one read.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["RECORD_NAME", "InstallRecord", "record_path"]

RECORD_NAME = "installed.json"

_Path = tuple[str, ...]
_Key = tuple[str | int, ...]


def _empty_texts(entry: Mapping[str, Any]) -> dict[_Key, str]:
    """An entry's ``"empty"`` list as ``{container path: original text}`` (malformed
    items skipped)."""
    found: dict[_Key, str] = {}
    items = entry.get("empty")
    for item in items if isinstance(items, list) else []:
        if (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)
                and isinstance(item[1], str)
                and all(isinstance(p, str | int) for p in item[0])):
            found.setdefault(tuple(item[0]), item[1])
    return found


def record_path(home: Path, env: Mapping[str, str]) -> Path:
    """Where the record lives for this home and environment (pure)."""
    if env.get("SSA_STATE_DIR"):
        return Path(env["SSA_STATE_DIR"]).expanduser() / RECORD_NAME
    if env.get("XDG_STATE_HOME"):
        return Path(env["XDG_STATE_HOME"]).expanduser() / "ssa" / RECORD_NAME
    return home / ".local" / "state" / "ssa" / RECORD_NAME


def _entries(text: str | None) -> dict[str, dict[str, Any]]:
    """The record's entries; an unreadable record counts as empty (it is only a hint
    that makes uninstall keep more)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    files = value.get("files") if isinstance(value, dict) else None
    return {k: v for k, v in files.items() if isinstance(v, dict)} \
        if isinstance(files, dict) else {}


class InstallRecord:
    """The record as read, plus what this install/uninstall noted.

    Args:
        path: the record file (:func:`record_path`).
        text: its text when the plan was made (``None``: none yet).
    """

    def __init__(self, path: Path, text: str | None) -> None:
        self.path = path
        self._known = _entries(text)
        self._installed: dict[str, tuple[bool, set[_Path]]] = {}
        self._empties: dict[str, dict[_Key, str]] = {}
        self._uninstalled: set[str] = set()

    @classmethod
    def load(cls, path: Path) -> InstallRecord:
        """Read the record at ``path`` (blocks on one small read; a missing, unreadable,
        oversized or not regular one counts as empty)."""
        try:
            st = path.stat()
            if not stat.S_ISREG(st.st_mode) or st.st_size > 1 << 20:
                return cls(path, None)  # (the write, under the lock, refuses such a file)
            return cls(path, path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError):
            return cls(path, None)

    # --- what uninstall asks ---------------------------------------------------------

    def may_remove_file(self, name: str) -> bool:
        """Whether an emptied ``name`` may be removed: only when the record says an
        install created it (nothing known of it: it stays)."""
        entry = self._known.get(name)
        return entry is not None and bool(entry.get("created"))

    def keeps(self, name: str) -> Callable[[Iterable[str | int]], bool]:
        """A test of a container's path in ``name``: ``True`` when it must stay even
        when emptied (it was there before the install)."""
        entry = self._known.get(name)
        if entry is None:
            return lambda _path: True  # nothing known: every container stays
        created = {tuple(p) for p in entry.get("containers", []) if isinstance(p, list)}
        return lambda path: tuple(path) not in created

    def empty_texts(self, name: str) -> dict[_Key, str]:
        """The containers of ``name`` that were empty before an install put our first
        entry in them: ``{path: original text}`` (empty when nothing is known)."""
        entry = self._known.get(name)
        return {} if entry is None else _empty_texts(entry)

    # --- what the transforms note ----------------------------------------------------

    def note_install(self, name: str, *, created: bool, containers: Iterable[_Path],
                     empties: Mapping[_Key, str] | None = None) -> None:
        """An install changed ``name``: whether it created the file, the containers it
        created, and the original text of each empty container it put a first entry in
        (``empties``; unions over several transforms of one file, the first text kept)."""
        was_created, known = self._installed.get(name, (False, set()))
        self._installed[name] = (was_created or created, known | set(containers))
        texts = self._empties.setdefault(name, {})
        for path, text in (empties or {}).items():
            texts.setdefault(path, text)

    def note_uninstall(self, name: str) -> None:
        """An uninstall took our entries out of ``name``: its entry goes."""
        self._uninstalled.add(name)

    def transform(self, old: str | None) -> str | None:
        """The record file's new text: ``old`` (read under the lock) with this run's
        notes merged in; ``None`` when no entry is left; ``old`` when nothing changes."""
        files = _entries(old)
        for name in self._uninstalled:
            files.pop(name, None)
        for name, (created, containers) in self._installed.items():
            entry = files.get(name)
            empties = self._empties.get(name, {})
            if entry is None:
                files[name] = _entry(created, containers, empties)
                continue
            merged = {tuple(p) for p in entry.get("containers", []) if isinstance(p, list)}
            files[name] = _entry(bool(entry.get("created")), merged | containers,
                                 {**empties, **_empty_texts(entry)})
        if files == _entries(old):
            return old
        if not files:
            return None
        return json.dumps({"version": 1, "files": files}, indent=2, sort_keys=True) + "\n"


def _entry(created: bool, containers: Iterable[_Path], empties: Mapping[_Key, str]
           ) -> dict[str, Any]:
    """One file's entry as the record holds it (``"empty"`` only when there is one)."""
    entry: dict[str, Any] = {"created": created,
                             "containers": sorted(list(p) for p in containers)}
    if empties:
        entry["empty"] = sorted(([list(p), text] for p, text in empties.items()),
                                key=lambda item: json.dumps(item[0]))
    return entry
