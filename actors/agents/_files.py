"""Safe edits of a person's configuration files: lock, read, change, back up, replace atomically.

Every change ``ssa install``/``ssa uninstall`` makes goes through
:func:`apply_changes`:

* the directories of all the files are locked first (``fcntl.flock`` on the
  directory itself, in path order, so two installs at once take turns and
  no lock file is left behind), then every file is read and every new text
  computed, and only when all of them could be computed is anything written
  (one unparsable file changes nothing anywhere);
* a file is replaced atomically (a temporary file in the same directory,
  written, fsynced, renamed over the old one, the directory fsynced); a
  symbolic link is followed, so a dotfile kept in another place is edited
  there and stays a link;
* before a person's file is changed its previous bytes go to
  ``<file>.ssa-backup`` (the latest change's backup; same mode as the file).
  No backup is kept of a file that is ours whole (a plugin, an extension) or
  of a settings file removed because nothing but ``{}`` was left of it;
* an edited file keeps its mode; a file we create is 0600 and a directory we
  create 0700.

Runs on the caller's thread and blocks on the file system (and on another
install's lock, at most ``lock_timeout_s``).
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import fcntl
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BACKUP_SUFFIX", "Change", "ConfigRefused", "FileOp", "apply_changes", "diff"]

BACKUP_SUFFIX = ".ssa-backup"
"""Beside each file we change: its content before our latest change."""

FILE_MODE = 0o600
DIR_MODE = 0o700


class ConfigRefused(Exception):
    """A file cannot be changed safely (unparsable, or holds a foreign entry where ours goes).

    Nothing has been written when it is raised. The message is one line that
    names the file.
    """


@dataclass(frozen=True)
class FileOp:
    """One file to bring to a new state: ``transform(old) -> new``.

    ``old`` is the file's text (``None``: it does not exist); the transform
    returns the new text, or ``None`` to remove the file. Returning ``old``
    means nothing to do. It raises :class:`ConfigRefused` to refuse.
    ``what`` names the change for the report (e.g. "UserPromptSubmit hook");
    ``owned``: the whole file is ours (a plugin), so no backup is kept.
    """

    path: Path
    transform: Callable[[str | None], str | None]
    what: str
    owned: bool = False


@dataclass(frozen=True)
class Change:
    """The outcome for one file: its text before and after (``None``: absent)."""

    path: Path
    what: str
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        """True when the file's content differs (or it appears or disappears)."""
        return self.before != self.after


def diff(change: Change) -> str:
    """A unified diff of one change (``/dev/null`` for a created or removed file)."""
    old = [] if change.before is None else change.before.splitlines(keepends=True)
    new = [] if change.after is None else change.after.splitlines(keepends=True)
    lines = difflib.unified_diff(
        old, new, fromfile="/dev/null" if change.before is None else str(change.path),
        tofile="/dev/null" if change.after is None else str(change.path))
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)


def _target(path: Path) -> Path:
    """The file a write to ``path`` must replace: a symbolic link's final target."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _make_dirs(directory: Path) -> None:
    """Create ``directory`` and missing parents, each new one 0700."""
    missing = []
    current = directory
    while not current.exists():
        missing.append(current)
        current = current.parent
    for each in reversed(missing):
        with contextlib.suppress(FileExistsError):
            each.mkdir(mode=DIR_MODE)
        os.chmod(each, DIR_MODE)  # mkdir's mode passes through the umask


@contextlib.contextmanager
def _locked(directories: list[Path], timeout_s: float) -> Iterator[None]:
    """Hold an exclusive ``flock`` on each directory (sorted, so installs never deadlock)."""
    fds: list[int] = []
    try:
        for directory in sorted(set(directories)):
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            fds.append(fd)
            deadline = time.monotonic() + timeout_s
            delay = 0.005
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise
                    if time.monotonic() >= deadline:
                        raise ConfigRefused(
                            f"{directory}: another ssa install holds its lock (waited "
                            f"{timeout_s:g} s)") from None
                    time.sleep(delay)  # a lock, not a test: back off like flock(1) -w
                    delay = min(delay * 2, 0.1)
        yield
    finally:
        for fd in reversed(fds):
            os.close(fd)  # closing releases the flock


def _read(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConfigRefused(f"{path} is a directory") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigRefused(f"{path} is not UTF-8 text; not changed") from None


def _write_atomic(path: Path, text: str, mode: int) -> None:
    """Replace ``path`` with ``text`` (temp file, fsync, rename, fsync of the directory)."""
    directory = path.parent
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".ssa-tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def apply_changes(ops: list[FileOp], *, dry_run: bool = False,
                  lock_timeout_s: float = 30.0) -> list[Change]:
    """Compute every file's new text under the locks, then write them (unless ``dry_run``).

    Returns:
        One :class:`Change` per op, in order (``changed`` tells which did).

    Raises:
        ConfigRefused: a transform refused, a file is not UTF-8 text, or the
            lock was not had in time. Nothing was written.
        OSError: a file or directory could not be read or written (earlier
            files of the list may have been written: each write is atomic).
    """
    targets = [FileOp(_target(op.path), op.transform, op.what, op.owned) for op in ops]
    directories = [op.path.parent for op in targets]
    if not dry_run:
        for directory in directories:
            _make_dirs(directory)
    lockable = [d for d in directories if d.is_dir()]
    changes: list[Change] = []
    with _locked(lockable, lock_timeout_s):
        for op, shown in zip(targets, ops, strict=True):
            before = _read(op.path)
            after = op.transform(before)
            changes.append(Change(shown.path, op.what, before, after))
        if dry_run:
            return changes
        done: dict[Path, str | None] = {}
        for op, change in zip(targets, changes, strict=True):
            if not change.changed:
                continue
            if op.path in done:  # two ops on one file: the transforms must be chained
                raise ConfigRefused(f"{op.path}: changed twice in one install")
            _commit(op.path, change.before, change.after, backup=not op.owned)
            done[op.path] = change.after
    return changes


def _commit(path: Path, before: str | None, after: str | None, *, backup: bool) -> None:
    """Back up ``before`` (an edited file of the person's) and put ``after`` in place
    (or remove the file)."""
    mode = FILE_MODE
    if before is not None:
        mode = stat.S_IMODE(path.stat().st_mode)
    if before is not None and after is not None and backup:
        _write_atomic(path.with_name(path.name + BACKUP_SUFFIX), before, mode)
    if after is None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        _fsync_dir(path.parent)
    else:
        _write_atomic(path, after, mode)
