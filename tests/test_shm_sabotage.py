"""A ``-shm`` made immutable (``chattr +i``) is refused, never a SIGBUS.

SQLite maps ``<database>-shm``; a store into a page the kernel may not write back kills
the process with SIGBUS (5 of 5 writers died). An immutable or append-only ``-shm`` (or
one that is not a regular file) is refused at open with one line, and one frozen while
a gateway is open is refused before SQLite's next use; the close then skips the
checkpoint that would store into it. (A ``-shm`` cut short mid-transaction, or frozen
mid-transaction, still kills: no handler can resume SQLite. docs: Limits.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors import Gateway
from actors.cli.app import main
from persistence import StorageError
from persistence._shm import shm_refusal

CHILD_TIMEOUT_S = 40.0
WORKER = "agent:main:w"
WATCHER = "agent:main:main"

CHILD = """
import logging, sys
logging.basicConfig(level=logging.WARNING)
from actors import Gateway
with Gateway.open(sys.argv[1], monitor=False) as gw:
    gw.watch("agent:main:main", "agent:main:w")
    print("ready", gw.human_message("agent:main:w", channel="x") is not None, flush=True)
    sys.stdin.readline()
    print("after", gw.human_message("agent:main:w", channel="x"), flush=True)
    print("pending", gw.pending_notices("agent:main:main"), flush=True)
print("closed", flush=True)
"""


def _chattr(flag: str, path: Path) -> bool:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True, check=False,
                          timeout=CHILD_TIMEOUT_S).returncode == 0


@pytest.fixture
def frozen(tmp_path: Path) -> Iterator[list[Path]]:
    """Paths to make immutable; made mutable again after the test (skips without chattr)."""
    probe = tmp_path / "probe"
    probe.write_text("x")
    try:
        if not _chattr("+i", probe):
            pytest.skip("chattr +i needs root (CAP_LINUX_IMMUTABLE) and ext2/3/4, xfs, btrfs")
    except FileNotFoundError:
        pytest.skip("no chattr")
    _chattr("-i", probe)
    paths: list[Path] = []
    yield paths
    for path in paths:
        _chattr("-i", path)


def _immutable_shm(path: Path, frozen: list[Path]) -> Path:
    """A signal log (one change) whose ``-shm`` was made immutable while it was mapped.

    (The last connection's close removes the ``-shm``; this one is closed without the
    checkpoint, the only store a close makes, so the frozen file stays behind.)
    """
    import apsw

    with Gateway.open(path, monitor=False) as gw:
        gw.watch(WATCHER, WORKER)
        gw.human_message(WORKER, channel="x")
    conn = apsw.Connection(str(path))
    try:
        assert conn.execute("SELECT count(*) FROM sessions").get == 2
        shm = Path(f"{path}-shm")
        frozen.append(shm)
        assert _chattr("+i", shm)
        conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    finally:
        conn.close()
    return shm


def test_an_immutable_shm_is_refused_at_open_in_one_line(
    tmp_path: Path, frozen: list[Path], capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "state.sqlite"
    shm = _immutable_shm(db, frozen)
    assert shm.exists()
    with pytest.raises(StorageError, match=r"-shm is immutable \(chattr\)"):
        Gateway.open(db, monitor=False)
    assert main(["watch", "--db", str(db), "--scans", "0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"ssa: {shm} is immutable (chattr); SQLite maps it")
    assert err.count("\n") == 1


def test_a_shm_frozen_while_a_gateway_is_idle_is_refused_not_a_sigbus(
    tmp_path: Path, frozen: list[Path],
) -> None:
    db = tmp_path / "state.sqlite"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready True\n"
        shm = Path(f"{db}-shm")
        frozen.append(shm)
        assert _chattr("+i", shm)
        out, err = child.communicate("go\n", timeout=CHILD_TIMEOUT_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(CHILD_TIMEOUT_S)
    assert child.returncode == 0, (child.returncode, err)  # -7 (SIGBUS) before
    assert out == "after None\npending []\nclosed\n"
    assert "was made immutable while it was open" in err
    _chattr("-i", shm)
    with Gateway.open(db, monitor=False) as gw:  # nothing lost: the -wal was kept
        assert gw.session_status(WORKER).state_version == 1


def test_a_shm_that_is_no_regular_file_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    os.mkfifo(f"{db}-shm")
    refusal = shm_refusal(str(db))
    assert refusal is not None
    assert refusal.startswith(f"{db}-shm is not a regular file")
    assert shm_refusal(str(tmp_path / "other.sqlite")) is None  # none yet: SQLite makes it
