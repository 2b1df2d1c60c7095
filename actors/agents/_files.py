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
  there and stays a link (a link whose target does not exist, or a loop of
  links, is refused: writing it would create folders wherever it points);
* a file the person made read-only (no owner write bit, ``chattr +i``/``+a``)
  is refused before anything is written;
* before a person's file is changed its previous bytes go to
  ``<file>.ssa-backup`` (the latest change's backup; same mode as the file;
  beside a symbolic link's target, :attr:`Change.backup` says where).
  No backup is kept of a file that is ours whole (a plugin, an extension) or
  of a settings file removed because nothing but ``{}`` was left of it;
* an edited file keeps its mode and its owner (root installing with another
  user's ``HOME`` leaves that user's files theirs); a file we create is 0600
  and a directory we create 0700, both owned like the folder they are made in;
  a file whose owner this process could not give back is refused;
* only regular files are read, never blocking and at most
  :data:`MAX_FILE_BYTES` (a FIFO, a device, a link to ``/dev/zero`` are
  refused in one line); a hard-linked file is refused, since the atomic
  replace would split it from its other names (writing in place instead would
  lose the atomicity a crash needs);
* temporary files are 0600 from creation; ones a killed install left beside
  a file are removed by the next run (under the directory's lock);
* a file another program rewrites between our read and our rename (Claude
  Code rewrites ``~/.claude.json`` without our lock) is read and computed
  again (bounded), so that rewrite is not lost. What remains is the window
  between the last check and the rename (microseconds).

Runs on the caller's thread and blocks on the file system (and on another
install's lock, at most ``lock_timeout_s``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import errno
import fcntl
import os
import stat
import sys
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
    ``drop_backup`` (uninstall): no backup is made, and the ``<file>.ssa-backup`` an
    install left is removed.
    """

    path: Path
    transform: Callable[[str | None], str | None]
    what: str
    owned: bool = False
    drop_backup: bool = False
    quiet: bool = False
    """Not reported to the person (ssa's own record of what it installed)."""
    notes: tuple[str, ...] = ()
    """Lines to tell the person after, only when this file changes (or, in a dry run,
    would): e.g. Codex's "trust the new hooks", pointless when ``hooks.json`` stays."""


@dataclass(frozen=True)
class Change:
    """The outcome for one file: its text before and after (``None``: absent).

    ``path`` is the file as the plan named it (a symbolic link stays the link);
    ``backup`` the ``.ssa-backup`` this change wrote, beside the file really written
    (a link's target), or ``None`` when it wrote none (a dry run, a new or removed
    file, a file that is ours whole, an uninstall).
    """

    path: Path
    what: str
    before: str | None
    after: str | None
    backup: Path | None = None

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
    """The file a write to ``path`` must replace: a symbolic link's final target.

    Raises:
        ConfigRefused: ``path`` is a symbolic link whose target does not exist (writing
            it would create the target's folders wherever the link points) or a loop
            of links.
    """
    if not path.is_symlink():
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        raise ConfigRefused(f"{path} is a symbolic link to {os.readlink(path)}, which does "
                            "not exist; not changed (create the target, or remove the "
                            "link)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigRefused(f"{path} is a loop of symbolic links; not changed") from None
        raise ConfigRefused(f"{path}: cannot follow the symbolic link "
                            f"({exc.strerror}); not changed") from None


def _owner_of_folder(directory: Path) -> tuple[int, int]:
    """The ``(uid, gid)`` a new file in ``directory`` gets: the folder's own."""
    st = os.stat(directory)
    return st.st_uid, st.st_gid


def _make_dirs(directory: Path) -> None:
    """Create ``directory`` and missing parents, each new one 0700 and owned like the
    nearest folder that was there (root installing into another user's home keeps it
    theirs).

    Raises:
        ConfigRefused: a folder of the path is a dangling symbolic link (or a loop).
    """
    missing = []
    current = directory
    while not current.exists():
        if current.is_symlink():  # a link to nothing (or a loop) in place of a folder
            raise ConfigRefused(f"{current} is a symbolic link to {os.readlink(current)}, "
                                "which does not lead to a folder; not changed")
        missing.append(current)
        current = current.parent
    owner = _owner_of_folder(current)
    for each in reversed(missing):
        with contextlib.suppress(FileExistsError):
            each.mkdir(mode=DIR_MODE)
        os.chmod(each, DIR_MODE)  # mkdir's mode passes through the umask
        _chown_if_needed(str(each), owner)


def _chown_if_needed(path: str | int, owner: tuple[int, int]) -> None:
    """Give ``path`` (or an open descriptor) ``owner`` unless it already has it."""
    st = os.stat(path) if isinstance(path, str) else os.fstat(path)
    if (st.st_uid, st.st_gid) != owner:
        if isinstance(path, int):
            os.fchown(path, *owner)
        else:
            os.chown(path, *owner)


def can_own(owner: tuple[int, int]) -> bool:
    """Whether this process may give a file ``owner`` (``(uid, gid)``): root may; another
    user only its own uid and one of its groups (pure but for the process's ids)."""
    if os.geteuid() == 0:
        return True
    uid, gid = owner
    return uid == os.geteuid() and (gid == os.getegid() or gid in os.getgroups())


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


MAX_FILE_BYTES = 128 * 1024 * 1024
"""The largest settings file install reads (bytes); a larger one is refused (a real
``~/.claude.json`` of a heavy user is some tens of MB)."""

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


@dataclass(frozen=True)
class _Seen:
    """A file as it was read: its text and what identifies that version of it."""

    text: str | None
    identity: tuple[int, int, int, int] | None  # (device, inode, size, mtime_ns)
    owner: tuple[int, int] | None
    mode: int | None
    links: int
    flags: int = 0
    """The inode flags (``chattr``: immutable, append-only); 0 when unknown."""


_FS_IOC_GETFLAGS = 0x80086601  # Linux, 64-bit (_IOR('f', 1, long))
_FS_IMMUTABLE_FL = 0x00000010
_FS_APPEND_FL = 0x00000020


def _fs_flags(fd: int) -> int:
    """The inode flags (``lsattr``) of open file ``fd``, or 0 where the platform or file
    system has none."""
    try:
        buf = fcntl.ioctl(fd, _FS_IOC_GETFLAGS, b"\0" * 8)
    except OSError:
        return 0
    return int.from_bytes(buf[:4], sys.byteorder)


def _folder_flags(directory: Path) -> int:
    """The inode flags of ``directory`` (0 when unknown or it cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        return _fs_flags(fd)
    finally:
        os.close(fd)


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _read(path: Path) -> _Seen:
    """Read ``path`` without ever blocking on it.

    Raises:
        ConfigRefused: not a regular file (a FIFO, a device, a directory...), larger
            than :data:`MAX_FILE_BYTES`, or not UTF-8.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return _Seen(None, None, None, None, 0)
    except IsADirectoryError:
        raise ConfigRefused(f"{path} is a directory") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a loop in a folder of the path
            raise ConfigRefused(f"{path}: a loop of symbolic links; not changed") from None
        raise
    try:
        st = os.fstat(fd)
        flags = _fs_flags(fd) if stat.S_ISREG(st.st_mode) else 0
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a file")
            raise ConfigRefused(f"{path} is {kind}, not a regular file; not changed")
        if st.st_size > MAX_FILE_BYTES:
            raise ConfigRefused(f"{path} is {st.st_size} bytes, more than the "
                                f"{MAX_FILE_BYTES} ssa install edits; not changed")
        chunks = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise ConfigRefused(f"{path} grows past {MAX_FILE_BYTES} bytes; not changed")
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigRefused(f"{path} is not UTF-8 text; not changed") from None
    return _Seen(text, _identity(st), (st.st_uid, st.st_gid), stat.S_IMODE(st.st_mode),
                 st.st_nlink, flags)


class _ChangedMeanwhile(Exception):
    """The file changed between our read and our rename: read and compute it again."""


TEMP_SUFFIX = ".ssa-tmp"
"""The ending of our temporary files (``.<file>.<random>.ssa-tmp``, beside the file)."""


def _remove_stale_temps(path: Path) -> None:
    """Remove temporary files of ours a killed install left beside ``path``.

    Called with the directory's lock held: no live install is writing one.
    """
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(path.parent):
            if (entry.name.startswith(f".{path.name}.") and entry.name.endswith(TEMP_SUFFIX)
                    and entry.is_file(follow_symlinks=False)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)


def _write_atomic(path: Path, text: str, mode: int, owner: tuple[int, int],
                  unchanged: Callable[[], bool] | None = None) -> None:
    """Replace ``path`` with ``text`` (temp file, fsync, rename, fsync of the directory).

    The temporary file is 0600 from its creation (``mkstemp``) until its content is
    synced; it then gets ``mode`` and ``owner``. ``unchanged`` (checked just before
    the rename) says whether ``path`` is still the version read; when not,
    :class:`_ChangedMeanwhile` is raised and nothing is replaced.
    """
    directory = path.parent
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
            _chown_if_needed(handle.fileno(), owner)
            os.fchmod(handle.fileno(), mode)
        if unchanged is not None and not unchanged():
            raise _ChangedMeanwhile
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


def _still(path: Path, seen: _Seen) -> bool:
    """Whether ``path`` is still the version ``seen`` (same inode, size and mtime)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return seen.identity is None
    return _identity(st) == seen.identity


RETRIES = 5
"""How often one file is read and computed again when it changes under us."""


def apply_changes(ops: list[FileOp], *, dry_run: bool = False,
                  lock_timeout_s: float = 30.0) -> list[Change]:
    """Compute every file's new text under the locks, then write them (unless ``dry_run``).

    A file another program rewrites between our read and our rename (Claude Code
    rewrites ``~/.claude.json`` at will, without our lock) is read and computed again,
    up to :data:`RETRIES` times, so its rewrite is never lost.

    Returns:
        One :class:`Change` per op, in order (``changed`` tells which did).

    Raises:
        ConfigRefused: a transform refused; a file is not UTF-8 text, not a regular
            file, too large, hard-linked, or owned by someone this process cannot
            give it back to; or the lock was not had in time. Nothing was written
            (but for a file that kept changing under us or turned unparsable
            while we retried: files before it in the list may be written).
        OSError: a file or directory could not be read or written (earlier
            files of the list may have been written: each write is atomic).
    """
    targets = [dataclasses.replace(op, path=_target(op.path)) for op in ops]
    directories = [op.path.parent for op in targets]
    if not dry_run:
        for directory in directories:
            _make_dirs(directory)
    lockable = [d for d in directories if d.is_dir()]
    changes: list[Change] = []
    seen: list[_Seen] = []
    with _locked(lockable, lock_timeout_s):
        for op, shown in zip(targets, ops, strict=True):
            found = _read(op.path)
            after = op.transform(found.text)
            changes.append(Change(shown.path, op.what, found.text, after))
            seen.append(found)
            if not dry_run and found.text != after:
                _check_writable(op.path, found)
        if dry_run:
            return changes
        done: dict[Path, str | None] = {}
        for index, (op, shown) in enumerate(zip(targets, ops, strict=True)):
            _remove_stale_temps(op.path)
            change, found = changes[index], seen[index]
            for _attempt in range(RETRIES):
                if not change.changed:
                    break
                if op.path in done:  # two ops on one file: the transforms must be chained
                    raise ConfigRefused(f"{op.path}: changed twice in one install")
                try:
                    backup = _commit(op.path, found, change.after,
                                     backup=not (op.owned or op.drop_backup))
                    changes[index] = dataclasses.replace(change, backup=backup)
                    done[op.path] = change.after
                    break
                except _ChangedMeanwhile:
                    found = _read(op.path)
                    change = Change(shown.path, op.what, found.text, op.transform(found.text))
                    _check_writable(op.path, found)
                    changes[index] = change
            else:
                if change.changed:
                    raise ConfigRefused(f"{op.path} kept changing while ssa install ran "
                                        f"({RETRIES} tries); not changed, try again")
            if op.drop_backup:
                _remove_backup(op.path)
    return changes


def _backup_of(path: Path) -> Path:
    """Where the backup of ``path`` (the file really written) goes: beside it."""
    return path.with_name(path.name + BACKUP_SUFFIX)


def _remove_backup(path: Path) -> None:
    """Remove ``<path>.ssa-backup`` (a regular file of ours) when it is there."""
    backup = _backup_of(path)
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISREG(os.lstat(backup).st_mode):
            backup.unlink()
            _fsync_dir(path.parent)


def _check_writable(path: Path, found: _Seen) -> None:
    """Refuse (before anything is written) a file we could not replace as it is, or one
    the person made read-only (mode without the owner's write bit, or ``chattr +i`` /
    ``+a``)."""
    if _folder_flags(path.parent) & (_FS_IMMUTABLE_FL | _FS_APPEND_FL):
        raise ConfigRefused(f"{path}: its folder {path.parent} is immutable or append-only "
                            "(chattr); not changed")
    if found.flags & (_FS_IMMUTABLE_FL | _FS_APPEND_FL):
        kind = "immutable" if found.flags & _FS_IMMUTABLE_FL else "append-only"
        raise ConfigRefused(f"{path} is {kind} (chattr); not changed (chattr -i/-a it "
                            "to let ssa change it, or make the change --dry-run shows by "
                            "hand)")
    if found.mode is not None and not found.mode & stat.S_IWUSR:
        raise ConfigRefused(f"{path} is read-only (mode {found.mode:04o}); not changed "
                            "(make it writable to let ssa change it, or make the change "
                            "--dry-run shows by hand)")
    if found.links > 1:
        raise ConfigRefused(
            f"{path} has {found.links} hard links, which replacing it would split; not "
            "changed (make the other names symbolic links, or make the change --dry-run "
            "shows by hand)")
    owner = found.owner if found.owner is not None else _owner_of_folder(path.parent)
    if not can_own(owner):
        raise ConfigRefused(f"{path}: it would belong to uid {owner[0]} gid {owner[1]}, "
                            "which this user cannot give it; not changed")


def _commit(path: Path, found: _Seen, after: str | None, *, backup: bool) -> Path | None:
    """Back up ``found`` (an edited file of the person's) and put ``after`` in place
    (or remove the file), keeping the file's mode and owner (a new file: 0600 and the
    folder's owner).

    Returns:
        The backup written (``<path>.ssa-backup``), or ``None`` when none was.

    Raises:
        _ChangedMeanwhile: ``path`` is no longer the version ``found`` (nothing replaced).
    """
    before = found.text
    mode = found.mode if found.mode is not None else FILE_MODE
    owner = found.owner if found.owner is not None else _owner_of_folder(path.parent)
    written = None
    if before is not None and after is not None and backup:
        written = _backup_of(path)
        _write_atomic(written, before, mode, owner)
    if after is None:
        if not _still(path, found):
            raise _ChangedMeanwhile
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        _fsync_dir(path.parent)
    else:
        _write_atomic(path, after, mode, owner, lambda: _still(path, found))
    return written
