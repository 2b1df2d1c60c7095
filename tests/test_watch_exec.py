"""``ssa watch --exec``: one command run per notice, bounded, timed, never in the loop's way.

The commands are small Python scripts. Their stdout and stderr go to a pipe
whose end of file proves that no process of a run (nor anything it started)
is left; runs that must block wait on a Unix socket the test answers, so
concurrency is checked by what has connected, never by sleeping.
"""

from __future__ import annotations

import io
import json
import logging
import os
import select
import socket
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from actors.cli import watch as _watch
from actors.cli.app import main
from actors.cli.execpool import ExecPool, command_argv
from actors.cli.watch import run_watch
from actors.errors import SessionStateError
from tests._upstream_rows import claude_user
from tests.test_watch_cli import AppendOnAdopt, _args, _catalog

TIMEOUT = 20.0
"""Seconds any single wait of these tests may take (below pytest-timeout's 60)."""

GATE = """\
    import socket, sys
    label = sys.stdin.read()
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(40)
        conn.connect(sys.argv[1])
        conn.sendall(label.encode() + b"\\n")
        conn.recv(1)  # until the test lets it go (or it is killed)
"""
"""A command that reports its stdin to the test's socket, then waits for an answer."""


class Output:
    """A pipe given to the pool as its commands' stdout and stderr."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self._write_open = True

    def close_and_read(self) -> bytes:
        """Close our write end, read until every holder is gone; fails after ``TIMEOUT``."""
        if self._write_open:
            os.close(self.write_fd)
            self._write_open = False
        chunks: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT
        while True:
            ready, _, _ = select.select([self.read_fd], [], [],
                                        max(deadline - time.monotonic(), 0.0))
            assert ready, "a process started by a run still holds its output open"
            chunk = os.read(self.read_fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    def close(self) -> None:
        """Close both ends (teardown)."""
        if self._write_open:
            os.close(self.write_fd)
        os.close(self.read_fd)


@pytest.fixture
def output() -> Iterator[Output]:
    pipe = Output()
    yield pipe
    pipe.close()


@pytest.fixture
def exec_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="actors.cli.execpool")
    return caplog


@pytest.fixture
def gate() -> Iterator[tuple[socket.socket, str]]:
    """A listening Unix socket (short path: ``sun_path`` is about 100 bytes)."""
    with tempfile.TemporaryDirectory(prefix="ssa") as where, \
            socket.socket(socket.AF_UNIX) as server:
        path = os.path.join(where, "gate")
        server.bind(path)
        server.listen(8)
        server.settimeout(TIMEOUT)
        yield server, path


def _script(tmp_path: Path, body: str, name: str = "cmd.py") -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def _arrived(server: socket.socket) -> tuple[socket.socket, str]:
    """The next run to connect, and the label it read on stdin."""
    conn, _ = server.accept()
    conn.settimeout(TIMEOUT)
    label = b""
    while not label.endswith(b"\n"):
        chunk = conn.recv(64)
        assert chunk, "the run hung up before saying who it is"
        label += chunk
    return conn, label.decode().strip()


def _nobody_waiting(server: socket.socket) -> bool:
    ready, _, _ = select.select([server], [], [], 0)
    return not ready


# --- the command line -------------------------------------------------------------------------


def test_command_is_split_without_a_shell_and_its_program_checked(tmp_path: Path) -> None:
    assert command_argv(f"{sys.executable} -c 'print(1)'", shell=False) == [
        sys.executable, "-c", "print(1)"]
    assert command_argv("echo $HOME | wc", shell=True) == ["/bin/sh", "-c", "echo $HOME | wc"]
    not_executable = tmp_path / "plain.txt"
    not_executable.write_text("")
    for command, problem in (("no-such-program-ssa --flag", "command not found on PATH: "
                              "no-such-program-ssa"),
                             (str(not_executable), "is not an executable file"),
                             ("  ", "needs a command"),
                             ("'unbalanced", "cannot split the command")):
        with pytest.raises(SessionStateError, match=problem):
            command_argv(command, shell=False)
    with pytest.raises(SessionStateError, match="needs a command"):
        command_argv("", shell=True)


def test_a_missing_program_is_one_line_at_startup(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    claude, _ = _catalog(tmp_path)
    db = tmp_path / "state.sqlite"
    assert main(["watch", "--db", str(db), "--claude", str(claude),
                 "--exec", "no-such-program-ssa --flag"]) == 1
    err = capsys.readouterr().err
    assert err == ("ssa: --exec: command not found on PATH: no-such-program-ssa "
                   "(--shell runs it with /bin/sh -c)\n")
    assert not db.exists()  # refused before anything was opened


@pytest.mark.parametrize(("extra", "problem"), [
    (["--shell"], "--shell needs --exec CMD"),
    (["--exec-jobs", "2"], "--exec-jobs needs --exec CMD"),
    (["--exec", sys.executable, "--exec-jobs", "0"], "--exec-jobs must be from 1 to 64"),
    (["--exec", sys.executable, "--exec-timeout", "nan"], "--exec-timeout must be a number"),
    (["--exec", sys.executable, "--exec-timeout", "0"], "--exec-timeout must be a number"),
])
def test_exec_options_are_checked(extra: list[str], problem: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["watch", "--db", str(tmp_path / "s.sqlite"), *extra]) == 1
    err = capsys.readouterr().err
    assert problem in err
    assert err.count("\n") == 1


# --- the pool: slow, failing, crashing commands ----------------------------------------------


def test_a_slow_command_is_killed_with_its_group_and_the_next_run_still_runs(
    tmp_path: Path, output: Output, exec_log: pytest.LogCaptureFixture,
) -> None:
    argv = _script(tmp_path, """\
        import os, signal, sys, time
        if sys.stdin.read() == "slow":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL stops it ...
            if os.fork() == 0:  # ... and what it started, in its group
                time.sleep(50)
                os._exit(0)
            print("started a child", flush=True)
            time.sleep(50)
        print("fast run done", flush=True)
    """)
    started = time.monotonic()
    with ExecPool(argv, timeout_s=3.0, jobs=1, output_fd=output.write_fd,
                  kill_grace_s=0.5) as pool:
        assert pool.submit(b"slow", {}, "slow run")
        assert pool.submit(b"fast", {}, "fast run")
        assert pool.wait_idle(TIMEOUT)
        assert pool.outcomes() == {"timed out": 1, "ok": 1}
    assert time.monotonic() - started < TIMEOUT
    text = output.close_and_read().decode()  # end of file: the forked child is gone too
    assert "started a child" in text
    assert "fast run done" in text
    assert "--exec for slow run: timed out after 3 s; its process group was killed" in \
        exec_log.text
    assert "--exec for fast run: done" in exec_log.text


def test_what_a_finished_command_left_running_is_killed(
    tmp_path: Path, output: Output,
) -> None:
    argv = _script(tmp_path, """\
        import os, time
        if os.fork() == 0:
            time.sleep(50)  # would outlive the run
            os._exit(0)
        print("left a child", flush=True)
    """)
    with ExecPool(argv, timeout_s=TIMEOUT, jobs=1, output_fd=output.write_fd) as pool:
        assert pool.submit(b"", {}, "leaver")
        assert pool.wait_idle(TIMEOUT)
        assert pool.outcomes() == {"ok": 1}
    assert output.close_and_read() == b"left a child\n"  # and that child is gone


def test_a_failing_command_is_logged_in_one_line_and_the_next_run_still_runs(
    tmp_path: Path, output: Output, exec_log: pytest.LogCaptureFixture,
) -> None:
    argv = _script(tmp_path, """\
        import sys
        sys.exit(3 if sys.stdin.read().startswith("fail") else 0)
    """)
    with ExecPool(argv, timeout_s=TIMEOUT, jobs=1, output_fd=output.write_fd) as pool:
        assert pool.submit(b"fail: private words", {}, "agent:main:x changesSince 4")
        assert pool.submit(b"fine", {}, "agent:main:x changesSince 5")
        assert pool.wait_idle(TIMEOUT)
        assert pool.outcomes() == {"failed": 1, "ok": 1}
    output.close_and_read()
    failures = [r.getMessage() for r in exec_log.records if r.levelno >= logging.WARNING]
    assert len(failures) == 1
    assert failures[0].startswith(
        "--exec for agent:main:x changesSince 4: exited with status 3 (")
    assert "private words" not in exec_log.text  # what a run reads never enters the log


def test_a_crashing_command_is_logged_with_its_signal(
    tmp_path: Path, output: Output, exec_log: pytest.LogCaptureFixture,
) -> None:
    argv = _script(tmp_path, """\
        import os, resource, sys
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file
        if sys.stdin.read() == "crash":
            os.abort()
    """)
    with ExecPool(argv, timeout_s=TIMEOUT, jobs=1, output_fd=output.write_fd) as pool:
        assert pool.submit(b"crash", {}, "crasher")
        assert pool.submit(b"", {}, "survivor")
        assert pool.wait_idle(TIMEOUT)
        assert pool.outcomes() == {"crashed": 1, "ok": 1}
    output.close_and_read()
    assert "--exec for crasher: killed by SIGABRT (" in exec_log.text


def test_a_command_that_disappeared_is_logged_not_raised(
    tmp_path: Path, output: Output, exec_log: pytest.LogCaptureFixture,
) -> None:
    program = tmp_path / "gone"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o700)
    argv = command_argv(str(program), shell=False)  # there at startup ...
    program.unlink()  # ... removed while watching
    with ExecPool(argv, timeout_s=TIMEOUT, jobs=1, output_fd=output.write_fd) as pool:
        assert pool.submit(b"", {}, "orphan")
        assert pool.wait_idle(TIMEOUT)
        assert pool.outcomes() == {"unstartable": 1}
    assert f"--exec for orphan: cannot start {program}: No such file or directory" in \
        exec_log.text


def test_stdin_and_environment_reach_the_command(
    tmp_path: Path, output: Output, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SSA_TEST_INHERITED", "from the watch")
    seen = tmp_path / "seen.json"
    argv = _script(tmp_path, """\
        import json, os, sys
        data = sys.stdin.buffer.read()
        if len(sys.argv) > 2:
            with open(sys.argv[1], "w") as f:
                json.dump({"stdin": data.decode(), "key": os.environ["SSA_SESSION_KEY"],
                           "inherited": os.environ["SSA_TEST_INHERITED"],
                           "pgid_is_own": os.getpgid(0) == os.getpid()}, f)
    """)
    big = b"x" * (4 << 20)  # far more than a pipe holds, to a command that never reads it
    with ExecPool([*argv, str(seen), "write"], timeout_s=TIMEOUT, jobs=1,
                  output_fd=output.write_fd) as pool:
        assert pool.submit(b'{"notice": "n"}\n', {"SSA_SESSION_KEY": "agent:main:k"}, "one")
        assert pool.wait_idle(TIMEOUT)
    with ExecPool([*argv[:1], "-c", "pass"], timeout_s=TIMEOUT, jobs=1,
                  output_fd=output.write_fd) as pool:
        assert pool.submit(big, {}, "unread")
        assert pool.wait_idle(TIMEOUT)
        assert pool.outcomes() == {"ok": 1}
    output.close_and_read()
    assert json.loads(seen.read_text()) == {
        "stdin": '{"notice": "n"}\n', "key": "agent:main:k", "inherited": "from the watch",
        "pgid_is_own": True}


def test_runs_at_once_are_bounded_and_a_full_queue_skips_without_blocking(
    tmp_path: Path, output: Output, gate: tuple[socket.socket, str],
    exec_log: pytest.LogCaptureFixture,
) -> None:
    server, path = gate
    argv = [*_script(tmp_path, GATE), path]
    with ExecPool(argv, timeout_s=TIMEOUT * 2, jobs=2, queue_limit=1,
                  output_fd=output.write_fd) as pool:
        first: dict[str, socket.socket] = {}
        for n in ("1", "2"):  # one at a time, so the queue is empty again after each
            assert pool.submit(n.encode(), {}, f"run {n}")
            conn, label = _arrived(server)
            first[label] = conn
        assert sorted(first) == ["1", "2"]  # both slots busy
        assert pool.submit(b"3", {}, "run 3")  # waits for a slot
        assert not pool.submit(b"4", {}, "run 4")  # the queue is full: skipped, at once
        assert _nobody_waiting(server)  # run 3 has not started
        with first["1"] as conn:
            conn.sendall(b"x")
        third, label = _arrived(server)  # a slot is free: run 3 starts
        assert label == "3"
        for conn in (first["2"], third):
            with conn:
                conn.sendall(b"x")
        assert pool.wait_idle(TIMEOUT)
        assert pool.outcomes() == {"ok": 3, "skipped": 1}
    output.close_and_read()
    assert "--exec for run 4: skipped, 1 runs already wait for a free slot" in exec_log.text


def test_closing_stops_running_commands_and_drops_queued_ones(
    tmp_path: Path, output: Output, gate: tuple[socket.socket, str],
    exec_log: pytest.LogCaptureFixture,
) -> None:
    server, path = gate
    argv = [*_script(tmp_path, GATE), path]
    pool = ExecPool(argv, timeout_s=TIMEOUT * 2, jobs=1, output_fd=output.write_fd,
                    kill_grace_s=0.5)
    try:
        assert pool.submit(b"1", {}, "run 1")
        conn, label = _arrived(server)
        assert pool.submit(b"2", {}, "run 2")
    finally:
        started = time.monotonic()
        pool.close(grace_s=0.2)
    with conn:
        assert label == "1"
        assert time.monotonic() - started < TIMEOUT
        assert conn.recv(1) == b""  # the run was killed
    assert not pool.submit(b"3", {}, "run 3")
    assert pool.outcomes() == {"stopped": 1, "dropped": 1, "skipped": 1}
    output.close_and_read()
    assert "--exec for run 1: stopped with the watch; its process group was killed" in \
        exec_log.text
    assert "--exec: the watch stopped; 1 queued runs were not started" in exec_log.text
    assert "--exec for run 3: skipped, the watch is stopping" in exec_log.text


# --- ssa watch --exec, end to end --------------------------------------------------------------


def test_watch_exec_hands_each_notice_to_a_failing_command_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exec_log: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(_watch, "EXEC_SHUTDOWN_GRACE_S", TIMEOUT)  # let the run finish
    claude, session = _catalog(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    script = _script(tmp_path, """\
        import json, os, sys
        with open(os.path.join(sys.argv[1], f"run-{os.getpid()}.json"), "w") as f:
            json.dump({"stdin": sys.stdin.read(), "env": {
                k: v for k, v in os.environ.items() if k in (
                    "SSA_SESSION_KEY", "SSA_CHANGES_SINCE", "SSA_STATE_VERSION",
                    "SSA_WATCHER")}}, f)
        sys.exit(3)
    """)
    out = AppendOnAdopt(session, claude_user("typed while watched"))
    args = _args(tmp_path, claude=[str(claude)], json=True, poll_only=True,
                 exec=f"{' '.join(script)} '{runs}'", exec_timeout=TIMEOUT, exec_jobs=2)
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    notice_line = out.getvalue().splitlines()[1]
    record = msgspec.json.decode(notice_line)
    assert record["sessionKey"] == "agent:main:claude:abc"
    assert [e["kind"] for e in record["events"]] == ["human_direct_message"]
    assert (record["historyGap"], record["truncated"]) == (False, False)
    [run] = [json.loads(p.read_text()) for p in runs.iterdir()]
    assert run["stdin"] == notice_line + "\n"  # the --json line, as one document
    assert run["env"] == {"SSA_SESSION_KEY": "agent:main:claude:abc",
                          "SSA_CHANGES_SINCE": str(record["changesSince"]),
                          "SSA_STATE_VERSION": str(record["stateVersion"]),
                          "SSA_WATCHER": "agent:main:main"}
    assert "--exec for agent:main:claude:abc changesSince 1: exited with status 3" in \
        exec_log.text
    # The command failed; the notice is still reconcilable from the signal log.
    capsys.readouterr()
    assert main(["status", "agent:main:claude:abc", "--changes-since",
                 str(record["changesSince"]), "--db", str(args.db)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [e["kind"] for e in status["stateChanges"]["events"]] == ["human_direct_message"]


class TypeAgainOnNotice(AppendOnAdopt):
    """Types a second turn once the first notice is printed; on the second, waits for
    the first notice's run to connect to ``server`` (so it surely hangs meanwhile)."""

    def __init__(self, path: Path, rows: bytes, server: socket.socket) -> None:
        super().__init__(path, rows)
        self.server = server
        self.runs: list[tuple[socket.socket, str]] = []

    def write(self, text: str) -> int:
        if text.startswith("notice: "):
            if "notice: " not in self.getvalue():
                with self.path.open("ab") as handle:
                    handle.write(claude_user("typed again"))
            else:
                self.runs.append(_arrived(self.server))
        return super().write(text)


def test_a_hanging_command_never_stalls_the_watch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exec_log: pytest.LogCaptureFixture,
    gate: tuple[socket.socket, str],
) -> None:
    monkeypatch.setattr(_watch, "EXEC_SHUTDOWN_GRACE_S", 0.2)
    server, path = gate
    claude, session = _catalog(tmp_path)
    script = _script(tmp_path, GATE)
    out = TypeAgainOnNotice(session, claude_user("typed while watched"), server)
    args = _args(tmp_path, claude=[str(claude)], scans=2, poll_only=True,
                 exec=f"{' '.join(script)} '{path}'", exec_timeout=50.0, exec_jobs=1)
    started = time.monotonic()
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    assert time.monotonic() - started < TIMEOUT  # not the command's 50 s
    assert out.getvalue().count("notice: ") == 2  # the second while the first run hung
    [(conn, document)] = out.runs
    with conn:
        assert json.loads(document)["changesSince"] == 1
        assert conn.recv(1) == b""  # killed when the watch stopped
    assert "changesSince 1: stopped with the watch; its process group was killed" in \
        exec_log.text
    assert "the watch stopped; 1 queued runs were not started" in exec_log.text


def test_shell_mode_runs_the_command_with_sh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_watch, "EXEC_SHUTDOWN_GRACE_S", TIMEOUT)
    claude, session = _catalog(tmp_path)
    seen = tmp_path / "seen.txt"
    out = AppendOnAdopt(session, claude_user("typed while watched"))
    args = _args(tmp_path, claude=[str(claude)], poll_only=True, shell=True,
                 exec=f'echo "$SSA_SESSION_KEY $SSA_CHANGES_SINCE" > \'{seen}\'')
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    assert seen.read_text() == "agent:main:claude:abc 1\n"
