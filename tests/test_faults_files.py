"""Issue 25: corrupt, failing and odd database files, with real files.

Corrupted copies of a real signal log, a small tmpfs that fills up, file
modes, opens that cannot work. Each test failed before its fix.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw
import pytest

import persistence._prune
from actors import Gateway
from actors.errors import DatabaseCorrupt, GatewayClosed, StorageError
from actors.testing import ManualClock
from tests._faults_support import log_lines
from tests.conftest import CHILD, WATCHER

pytestmark = pytest.mark.sqlite_only

EVENTS = 100


def _log_of_100(path: Path) -> None:
    """A closed signal log holding :data:`EVENTS` events of ``CHILD`` (checkpointed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with Gateway.open(path, monitor=False) as gw:
        assert gw.watch(WATCHER, CHILD)
        for _ in range(EVENTS):
            assert gw.human_message(CHILD, channel="test") is not None


def _integrity_ok(path: Path) -> bool:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [r[0] for r in conn.execute("PRAGMA integrity_check")] == ["ok"]
    except apsw.Error:
        return False
    finally:
        conn.close()


def test_a_corrupted_copy_is_refused_at_open_with_how_to_recover(tmp_path: Path) -> None:
    """Issue 25 item 3: ``Gateway.open`` accepted copies that fail ``integrity_check``
    (and some answered a silently short ``changesSince``). Now every damaged copy is
    refused with :class:`DatabaseCorrupt`, and an intact one answers all events."""
    original = tmp_path / "log" / "state.sqlite"
    _log_of_100(original)
    pages = original.stat().st_size // 4096
    refused = accepted = 0
    for page in range(1, pages):  # page 0 holds the header: NotADB, a separate path
        copy = tmp_path / f"copy-{page}.sqlite"
        shutil.copyfile(original, copy)
        with copy.open("r+b") as handle:
            handle.seek(page * 4096 + 8)
            handle.write(os.urandom(4096 - 16))
        if _integrity_ok(copy):
            with Gateway.open(copy, monitor=False) as gw:
                status = gw.session_status(CHILD, changes_since=0)
                assert status.state_changes is not None
                assert len(status.state_changes.events) == EVENTS  # never silently short
            accepted += 1
            continue
        with pytest.raises(DatabaseCorrupt) as raised:
            Gateway.open(copy, monitor=False)
        assert str(copy) in str(raised.value)
        assert "move it aside" in str(raised.value)
        refused += 1
    assert refused > 0


def test_ssa_status_refuses_a_corrupted_copy_and_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    from actors.cli.app import main

    db = tmp_path / "log" / "state.sqlite"
    _log_of_100(db)
    for page in range(1, db.stat().st_size // 4096):
        with db.open("r+b") as handle:
            handle.seek(page * 4096 + 8)
            handle.write(b"\xff" * 64)
    assert not _integrity_ok(db)
    assert main(["status", CHILD, "--changes-since", "0", "--db", str(db)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"ssa: {db} is corrupt (")
    assert f"mv {db} {db}.corrupt" in err


def test_corruption_met_while_pruning_stops_all_writing_with_one_error(
    open_gateway: Callable[..., Gateway], clock: ManualClock, db_path: Path,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 25 item 3: a ``CorruptError`` during pruning was logged and the gateway
    went on committing into the malformed file."""
    gw = open_gateway()
    assert gw.watch(WATCHER, CHILD)
    assert gw.human_message(CHILD, channel="test") is not None

    def corrupt(*args: object, **kwargs: object) -> tuple[int, int]:
        raise apsw.CorruptError("database disk image is malformed")

    monkeypatch.setattr(persistence._prune, "prune", corrupt)
    caplog.set_level(logging.INFO)
    clock.advance(gw.config.prune_interval_ms + 1)  # the next write prunes
    gw.human_message(CHILD, channel="test")
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        before = conn.execute("SELECT count(*) FROM session_state_events").get
    finally:
        conn.close()
    with pytest.raises(GatewayClosed):
        gw.human_message(CHILD, channel="test")
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("SELECT count(*) FROM session_state_events").get == before
    finally:
        conn.close()
    errors = log_lines(caplog, "persistence", logging.ERROR)
    assert len(errors) == 1
    assert "nothing more is written into it" in errors[0]
    assert "move it aside" in errors[0]
    assert not [m for m in log_lines(caplog, "persistence") if "prune failed" in m]


def test_a_failing_prune_is_logged_once_per_episode_not_after_every_batch(
    open_gateway: Callable[..., Gateway], clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 25 item 4: a failed prune was logged after every later batch."""
    gw = open_gateway()
    assert gw.watch(WATCHER, CHILD)
    real = persistence._prune.prune

    def failing(*args: object, **kwargs: object) -> tuple[int, int]:
        raise apsw.IOError("disk I/O error")

    monkeypatch.setattr(persistence._prune, "prune", failing)
    caplog.set_level(logging.INFO)
    for _ in range(50):
        clock.advance(gw.config.prune_interval_ms + 1)
        assert gw.human_message(CHILD, channel="test") is not None  # writes still work
    warnings = log_lines(caplog, "persistence")
    assert warnings == [m for m in warnings if "pruning is failing" in m]
    assert len(warnings) == 1
    monkeypatch.setattr(persistence._prune, "prune", real)
    clock.advance(gw.config.prune_interval_ms + 1)
    assert gw.human_message(CHILD, channel="test") is not None
    assert log_lines(caplog, "persistence")[1:] == ["signal-log pruning works again"]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs of its own (root only), unmounted at teardown."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs",
                           str(mount)], capture_output=True, timeout=30, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace')}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30,
                       check=False)


def _fill(directory: Path) -> Path:
    """Take every free byte of ``directory``'s file system with one file; returns it."""
    filler = directory / "filler"
    with filler.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


def test_a_full_tmpfs_logs_one_line_when_writes_fail_and_one_when_they_really_recover(
    tmpfs: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 25 item 4, on a real full file system: small writes that still fit used to
    log "recovered" while the disk stayed full (the rest at debug level only), and the
    real recovery went unlogged."""
    caplog.set_level(logging.INFO)
    with Gateway.open(tmpfs / "state.sqlite", monitor=False, clock=clock) as gw:
        assert gw.watch(WATCHER, CHILD)
        assert gw.human_message(CHILD, channel="before") is not None
        filler = _fill(tmpfs)
        caplog.clear()
        results = []
        for i in range(200):
            results.append(gw.human_message(CHILD, channel=f"full {i}"))
            gw.watch(WATCHER, CHILD)  # re-registration: a small write that may still fit
            clock.advance(100)
        assert None in results
        lines = log_lines(caplog, "persistence")
        assert sum("writes are failing" in m for m in lines) == 1
        assert not [m for m in lines if "recovered" in m]  # the disk is still full
        filler.unlink()
        assert gw.human_message(CHILD, channel="after") is not None
        clock.advance(5_000)
        assert gw.human_message(CHILD, channel="held") is not None
        lines = log_lines(caplog, "persistence")
        assert sum("writes are failing" in m for m in lines) == 1
        assert sum("writes recovered" in m for m in lines) == 1


def test_a_failing_drain_acknowledgement_is_logged_once_per_episode(
    open_gateway: Callable[..., Gateway], caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 25 item 4: a failed drain acknowledgement was logged on every ``drain``
    (about 19 a second under a polling loop)."""
    from tests._faults_support import ReadFaultVFS, fault_config

    vfs = ReadFaultVFS()
    gw = open_gateway(fault_config(vfs=vfs.name))
    assert gw.watch(WATCHER, CHILD)
    assert gw.human_message(CHILD, channel="test") is not None
    caplog.set_level(logging.INFO)
    caplog.clear()
    vfs.mode = "full"
    try:
        for _ in range(20):
            assert gw.drain(WATCHER) == []  # not acknowledged: nothing handed out
    finally:
        vfs.mode = None
    drained = gw.drain(WATCHER)
    assert len(drained) == 1
    lines = [m for m in log_lines(caplog, "actors") if "acknowledging" in m]
    assert len(lines) == 2
    assert "failed" in lines[0]
    assert lines[1] == "acknowledging drained notices works again"


# --- item 5: opens that should fail, and item 7: arguments -------------------------------


@pytest.mark.parametrize("path", [":memory:", "", "file:state.sqlite?mode=memory"])
def test_an_in_memory_or_uri_database_is_refused_and_leaves_no_files(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 25 item 5: ``:memory:`` was accepted, could never write, and left files
    named ``:memory:`` and ``:memory:.lock``."""
    from actors.errors import InvalidArgument

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgument, match="not supported"):
        Gateway.open(path, monitor=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("path", "error", "match"), [
    (b"/tmp/state.sqlite", "ArgumentTypeError", "not bytes"),
    (5, "ArgumentTypeError", "not int"),
    ("state\0.sqlite", "InvalidArgument", "NUL"),
])
def test_open_refuses_unusable_paths_with_the_librarys_errors(
    path: object, error: str, match: str,
) -> None:
    """Issue 25 item 7: these raised raw ``TypeError``/``ValueError``."""
    import actors.errors

    with pytest.raises(getattr(actors.errors, error), match=match):
        Gateway.open(path, monitor=False)  # type: ignore[arg-type]


def test_open_names_a_symlink_loop(tmp_path: Path) -> None:
    from actors.errors import InvalidArgument

    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(InvalidArgument, match="symlink loop"):
        Gateway.open(tmp_path / "a", monitor=False)


@pytest.mark.parametrize(("clock", "error"), [
    (lambda: 1_796_169_600, "InvalidArgument"),  # seconds, not milliseconds
    (lambda: 1_796_169_600.5, "ArgumentTypeError"),
    (lambda: -1, "InvalidArgument"),
    (lambda: 1 / 0, "InvalidArgument"),
])
def test_open_refuses_an_implausible_clock(
    clock: Callable[[], object], error: str, db_path: Path,
) -> None:
    """Issue 25 item 7: a clock of seconds was taken as milliseconds (events in 1970)."""
    import actors.errors

    with pytest.raises(getattr(actors.errors, error), match="clock"):
        Gateway.open(db_path, monitor=False, clock=clock)  # type: ignore[arg-type]
    assert not db_path.exists()  # refused before anything was created


def test_adopt_many_refuses_what_is_not_a_list_of_requests(
    open_gateway: Callable[..., Gateway],
) -> None:
    from actors.errors import ArgumentTypeError

    gw = open_gateway()
    for bad in (5, "agent:main:x", None):
        with pytest.raises(ArgumentTypeError, match="list of AdoptRequest"):
            gw.adopt_many(bad)  # type: ignore[arg-type]


def test_a_file_this_process_cannot_write_is_refused_even_beside_an_open_gateway(
    tmp_path: Path,
) -> None:
    """Issue 25 item 5: with another gateway holding the file, a process that may not
    write it opened fine and every producer returned ``None``. The same file is seen
    through a read-only bind mount (root ignores file modes; a mount it cannot)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only bind mount needs root and mount(8)")
    rw, ro = tmp_path / "rw", tmp_path / "ro"
    rw.mkdir()
    ro.mkdir()
    with Gateway.open(rw / "state.sqlite", monitor=False) as gw:
        assert gw.watch(WATCHER, CHILD)
        for args in (["--bind", str(rw), str(ro)], ["-o", "remount,ro,bind", str(ro)]):
            done = subprocess.run(["mount", *args], capture_output=True, timeout=30,
                                  check=False)
            if done.returncode != 0:
                subprocess.run(["umount", "-l", str(ro)], capture_output=True, timeout=30,
                               check=False)
                pytest.skip(f"cannot bind-mount here: {done.stderr.decode(errors='replace')}")
        try:
            with pytest.raises(StorageError, match="cannot write") as raised:
                Gateway.open(ro / "state.sqlite", monitor=False)
            assert "permission denied" in str(raised.value) or "read-only" in str(raised.value)
            assert gw.human_message(CHILD, channel="test") is not None  # the first one works
        finally:
            subprocess.run(["umount", "-l", str(ro)], capture_output=True, timeout=30,
                           check=False)


def test_a_deleted_wal_beside_a_running_gateway_is_explained(tmp_path: Path) -> None:
    """Issue 25 item 5: after the ``-wal`` was deleted, a new process got only "disk I/O
    error" (and, since the open-time check, "corrupt", which it is not)."""
    from actors.errors import StorageError

    db = tmp_path / "state.sqlite"
    with Gateway.open(db, monitor=False) as gw:
        assert gw.watch(WATCHER, CHILD)
        assert gw.human_message(CHILD, channel="test") is not None
        os.unlink(f"{db}-wal")
        with pytest.raises(StorageError) as raised:
            Gateway.open(db, monitor=False)
    assert not isinstance(raised.value, DatabaseCorrupt)
    assert "-wal file is missing" in str(raised.value)
    assert "deleted" in str(raised.value)


# --- item 10: file modes -------------------------------------------------------------------


def test_a_database_the_user_pre_created_world_readable_is_made_private(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 25 item 10: a file pre-created 0644 stayed 0644, and so did its -wal/-shm."""
    import stat as st

    db = tmp_path / "state.sqlite"
    db.touch()
    db.chmod(0o644)
    caplog.set_level(logging.WARNING)
    with Gateway.open(db, monitor=False) as gw:
        assert gw.watch(WATCHER, CHILD)
        assert gw.human_message(CHILD, channel="test") is not None
        modes = {p.name: st.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == {"state.sqlite": 0o600, "state.sqlite-wal": 0o600,
                     "state.sqlite-shm": 0o600, "state.sqlite.lock": 0o600}
    warned = [m for m in log_lines(caplog, "persistence") if "made it private" in m]
    assert len(warned) == 1
    assert "0644" in warned[0]
    # A file made group-readable later, and a shared lock file, are made private again.
    os.chmod(db, 0o640)
    Path(f"{db}.lock").chmod(0o666)
    with Gateway.open(db, monitor=False):
        pass
    assert st.S_IMODE(db.stat().st_mode) == 0o600
    assert st.S_IMODE(Path(f"{db}.lock").stat().st_mode) == 0o600


# --- item 6: the -shm SQLite maps -------------------------------------------------------

_SHM_CHILD = """
import os, sys, logging
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
from actors import Gateway
path = sys.argv[1]
with Gateway.open(path, monitor=False, hosts=["agent:main:main"], on_wake=lambda w: None) as gw:
    gw.watch("agent:main:main", "agent:main:subagent:c")
    assert gw.human_message("agent:main:subagent:c", channel="before") is not None
    os.truncate(path + "-shm", 0)  # what another program did to the mapped file
    after = gw.human_message("agent:main:subagent:c", channel="after")
    status = gw.session_status("agent:main:subagent:c", changes_since=0)
    print("after", after is not None, status.state_version,
          len(status.state_changes.events), flush=True)
print("closed", flush=True)
"""


def test_a_shm_file_cut_short_under_a_running_gateway_is_survived(tmp_path: Path) -> None:
    """Issue 25 item 6: SQLite maps ``-shm``; once something cut it short the next
    access killed the process with SIGBUS. Now its size is given back (SQLite rebuilds
    the index from the ``-wal``) and the gateway goes on, with a warning."""
    import sys

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", _SHM_CHILD, str(tmp_path / "s.sqlite")],
                          capture_output=True, text=True, timeout=60, cwd=str(root),
                          env={**os.environ, "PYTHONPATH": str(root)}, check=False)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.splitlines() == ["after True 2 2", "closed"]
    assert "-shm file" in done.stderr
    assert "cut short" in done.stderr
