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


def shm_refusal(database: str) -> str | None:
    """Why ``<database>-shm`` must not be mapped now (one line), or ``None``.

    Refused: something that is not a regular file, a file with the immutable
    or append-only flag, a file this user cannot open for writing (SQLite
    would map it read-only and fail every write). A missing ``-shm`` is fine
    (SQLite creates it); one on a read-only file system is left to the
    database file's own check.
    """
    shm = f"{database}-shm"
    try:
        st = os.lstat(shm)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return f"{shm} is not a regular file; {_FIX}"
    try:
        fd = os.open(shm, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            frozen = _frozen_by(_flags(fd))
        finally:
            os.close(fd)
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
    """``immutable``/``append-only`` when ``<database>-shm`` was made so, else ``None``
    (one ``open``, ``ioctl`` and ``close``; used before each use of an open database)."""
    try:
        fd = os.open(f"{database}-shm", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return _frozen_by(_flags(fd))
    finally:
        os.close(fd)
