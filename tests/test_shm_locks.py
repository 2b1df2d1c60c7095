"""Checking the ``-shm`` must never drop SQLite's locks on it (a CI failure of this round).

``close`` of any descriptor of a file releases every POSIX lock the process holds on
it. The checks of the ``-shm`` (immutable, append-only) opened and closed the file
before each use: SQLite's shared "in use" lock went with it, the next process to
open the database took itself for the first, truncated the ``-shm`` to 3 bytes and
rebuilt it, and the gateway's map faulted (``ssa watch`` died with SIGBUS).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from actors import Gateway
from persistence._shm import shm_frozen, shm_refusal

CHILD_TIMEOUT_S = 30.0
_DMS_LOCK_HELD = (
    # Is SQLite's "in use" lock on the -shm held by another process? (F_GETLK on the
    # DMS byte, offset 128, as a write lock would test it: F_UNLCK means nobody.)
    "import fcntl, os, struct, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDWR)\n"
    "probe = struct.pack('hhqqi', fcntl.F_WRLCK, os.SEEK_SET, 128, 1, 0)\n"
    "kind = struct.unpack('hhqqi', fcntl.fcntl(fd, fcntl.F_GETLK, probe))[0]\n"
    "print('free' if kind == fcntl.F_UNLCK else 'held')\n"
)


def test_the_checks_keep_sqlites_locks_on_the_shm(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    with Gateway.open(db) as gw:
        assert gw.watch("agent:main:w", "agent:main:x")
        assert gw.human_message("agent:main:x", channel="t") is not None
        shm = Path(f"{db}-shm")
        size = shm.stat().st_size
        assert size >= 32768
        for _ in range(3):  # what each use and each new connection runs
            assert shm_frozen(str(db)) is None
            assert shm_refusal(str(db)) is None
        # Another process sees the database in use (it would reset the -shm otherwise).
        done = subprocess.run([sys.executable, "-c", _DMS_LOCK_HELD, str(shm)],
                              capture_output=True, timeout=CHILD_TIMEOUT_S, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.decode().strip() == "held", "the check dropped SQLite's lock"
        assert shm.stat().st_size >= size
        assert gw.human_message("agent:main:x", channel="t") is not None  # and we go on
    assert os.path.exists(db)
