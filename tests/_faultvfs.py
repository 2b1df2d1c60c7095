"""A fault-injecting SQLite VFS for storage-fault tests.

``FaultVFS`` wraps the default VFS; setting ``mode`` makes every write fail
as a full disk (``"full"``), a read-only file (``"readonly"``) or an I/O error
(``"ioerr"``) until it is set back to ``None``; setting ``sync_delay_s``
makes every ``fsync`` take that long (a slow disk). Open a gateway on it
with ``GatewayConfig(vfs=vfs.name)``.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import apsw

__all__ = ["FaultVFS"]

_names = itertools.count(1)


class FaultVFS(apsw.VFS):  # type: ignore[misc]
    """Pass-through VFS whose writes fail on demand (thread-safe enough: one flag)."""

    def __init__(self) -> None:
        self.name = f"ssa-fault-{next(_names)}"
        self.mode: str | None = None
        self.failed_writes = 0
        self.sync_delay_s = 0.0
        self.syncs = 0
        super().__init__(self.name, "")

    def xOpen(self, name: Any, flags: Any) -> apsw.VFSFile:
        return _FaultFile(self, name, flags)


class _FaultFile(apsw.VFSFile):  # type: ignore[misc]
    def __init__(self, vfs: FaultVFS, name: Any, flags: Any) -> None:
        self._vfs = vfs
        super().__init__("", name, flags)

    def xWrite(self, data: bytes, offset: int) -> None:
        mode = self._vfs.mode
        if mode is not None:
            self._vfs.failed_writes += 1
            error = {"full": apsw.FullError, "readonly": apsw.ReadOnlyError}.get(mode,
                                                                                apsw.IOError)
            raise error(f"injected {mode}")
        super().xWrite(data, offset)

    def xSync(self, flags: int) -> None:
        self._vfs.syncs += 1
        if self._vfs.sync_delay_s:
            time.sleep(self._vfs.sync_delay_s)  # a slow disk, not a wait for a condition
        super().xSync(flags)
