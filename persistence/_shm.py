"""The ``-shm`` file SQLite maps into memory: refused before SQLite touches it.

In WAL mode every connection maps ``<database>-shm`` (the index of the
``-wal`` that processes share). A store into a mapped page that the kernel
may not write back (the file made immutable or append-only with ``chattr``,
which also flushes the pages so the next store faults) or a load past the
end of a file cut short under the map kills the process with SIGBUS; no
handler can resume SQLite after it. What can be seen before SQLite touches
the file is refused here with one line: at open (:func:`shm_refusal`) and,
cheaply, before each use while open (:func:`shm_frozen`). What happens
between that look and SQLite's next store cannot be caught (docs: Limits).

Linux reports the flags through ``FS_IOC_GETFLAGS``; elsewhere, or on a
file system without them, only what ``open`` refuses is seen. Any thread;
a few system calls; never raises.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import struct
import sys

__all__ = ["shm_frozen", "shm_refusal"]

_FS_IOC_GETFLAGS = (2 << 30) | (struct.calcsize("l") << 16) | (ord("f") << 8) | 1
"""``_IOR('f', 1, long)``: the inode flags (``lsattr``)."""
_FS_IMMUTABLE_FL = 0x10
_FS_APPEND_FL = 0x20
_FIX = ("SQLite maps it and a process that writes to it would be killed (SIGBUS); make it "
        "writable again (chattr -i -a) or, with every process using the database stopped, "
        "remove it")


def _flags(fd: int) -> int | None:
    """The inode flags of ``fd`` (``None``: not Linux, or a file system without them)."""
    if not sys.platform.startswith("linux"):
        return None
    buffer = bytearray(struct.calcsize("l"))
    try:
        fcntl.ioctl(fd, _FS_IOC_GETFLAGS, buffer)
    except OSError:
        return None
    return int(struct.unpack("l", buffer)[0])


def _frozen_by(flags: int | None) -> str | None:
    """``immutable``/``append-only`` when the flags forbid SQLite's stores, else ``None``."""
    if flags is None:
        return None
    if flags & _FS_IMMUTABLE_FL:
        return "immutable"
    if flags & _FS_APPEND_FL:
        return "append-only"
    return None


def _mapped_fd(shm: str) -> int | None:
    """A descriptor of ``shm`` this process holds already (SQLite's, mapping it), or ``None``.

    Opening and closing the ``-shm`` ourselves would drop every POSIX lock this
    process holds on it (``close`` releases a process's ``fcntl`` locks on the
    file, whichever descriptor took them): SQLite's shared lock that says "in
    use" would go, the next process to open the database would take itself for
    the first, truncate the ``-shm`` to 3 bytes and rebuild it, and our map
    would fault (SIGBUS). So the flags are read through SQLite's own descriptor
    when there is one (Linux: ``/proc/self/fd``). Never raises.
    """
    try:
        want = os.stat(shm)
    except OSError:
        return None
    cached = _FDS.get(shm)
    if cached is not None:
        try:
            st = os.fstat(cached)
            if (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino):
                return cached
        except OSError:
            pass
        _FDS.pop(shm, None)
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for name in names:
        try:
            fd = int(name)
            st = os.fstat(fd)
        except (OSError, ValueError):
            continue
        if (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino) and stat.S_ISREG(st.st_mode):
            _FDS[shm] = fd
            return fd
    return None


_FDS: dict[str, int] = {}
"""The last descriptor found per ``-shm`` path (checked by inode before each use)."""


def shm_refusal(database: str) -> str | None:
    """Why ``<database>-shm`` must not be mapped now (one line), or ``None``.

    Refused: something that is not a regular file, a file with the immutable
    or append-only flag, a file this user cannot open for writing (SQLite
    would map it read-only and fail every write). A missing ``-shm`` is fine
    (SQLite creates it); one on a read-only file system is left to the
    database file's own check. While this process maps it already, only its
    flags are read, through that descriptor (:func:`_mapped_fd`).
    """
    shm = f"{database}-shm"
    try:
        st = os.lstat(shm)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return f"{shm} is not a regular file; {_FIX}"
    mapped = _mapped_fd(shm)
    if mapped is not None:
        frozen = _frozen_by(_flags(mapped))
        return None if frozen is None else f"{shm} is {frozen} (chattr); {_FIX}"
    try:
        fd = os.open(shm, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            frozen = _frozen_by(_flags(fd))
        finally:
            os.close(fd)  # no lock of ours on it yet: nothing to drop
        if frozen is not None:
            return f"{shm} is {frozen} (chattr); {_FIX}"
    try:
        fd = os.open(shm, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):  # (EROFS: the file's check says it)
            return (f"{shm} cannot be written by this user ({exc.strerror}): every write "
                    "would fail; give it back to this user (chown) or, with every process "
                    "using the database stopped, remove it")
        return None  # gone meanwhile, or another error: SQLite reports what it meets
    os.close(fd)
    return None


def shm_frozen(database: str) -> str | None:
    """``immutable``/``append-only`` when ``<database>-shm`` was made so, else ``None``.

    Used before each use of an open database: reads the flags through the
    descriptor SQLite maps it with (:func:`_mapped_fd`); never opens or closes
    the file (that would drop SQLite's locks). ``None`` when this process does
    not map it (then no store of ours can fault).
    """
    fd = _mapped_fd(f"{database}-shm")
    return None if fd is None else _frozen_by(_flags(fd))
