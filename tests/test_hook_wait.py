"""``ssa hook <tool> --wait`` (issue 35): an idle manager's waiting hook wakes it once.

The waiting hook runs as the tool would run it (a child process whose stdin
is the hook input); the worker's transcript is the test kit's. It must exit
with the push path's code (Claude Code: 2) right after a person types into
the worker, with the notice on stderr, and acknowledge it, so the next hook
shows nothing; a worker's or a no-wake manager's waiting hook ends at once
with 0; and it ends when its tool process ends.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from actors.agents.manage import run_manage
from actors.testing import ClaudeCodeTranscript, CodexRollout, Reply, Typed

WAIT_S = 20.0
"""Longest a test waits for the waiting hook (shorter than pytest-timeout's 60 s)."""


class Env:
    """A throw-away home: a manager Claude Code session and a Codex worker of one project."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.project = root / "proj"
        (self.project / ".git").mkdir(parents=True)
        (root / "state").mkdir()
        directory = root / ".claude" / "projects" / str(self.project).replace("/", "-")
        directory.mkdir(parents=True)
        self.manager = ClaudeCodeTranscript(directory / f"{uuid.uuid4()}.jsonl",
                                            cwd=str(self.project))
        self.manager.append(Typed("plan the work"), Reply("ok"))
        thread = str(uuid.uuid4())
        codex = root / ".codex" / "sessions" / "2026" / "12" / "06"
        codex.mkdir(parents=True)
        self.worker = CodexRollout(codex / f"rollout-2026-12-06T01-00-00-{thread}.jsonl",
                                   thread_id=thread, cwd=str(self.project))
        self.worker.append(Typed("an earlier prompt"), Reply("ok"))
        self.key = f"agent:main:claude:{self.manager.session_id}"
        self.worker_key = f"agent:main:codex:{thread}"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("SSA_", "CLAUDE_", "CODEX_", "XDG_"))}
        self.env.update({"HOME": str(root), "SSA_STATE_DIR": str(root / "state"),
                         "PYTHONPATH": str(Path(__file__).parents[1])})

    def manage(self, *, wake: bool = True) -> None:
        run_manage(self.root / "state" / "state.sqlite", self.key, off=False, wake=wake,
                   out=io.StringIO())

    def hook_input(self, event: str = "Stop") -> bytes:
        return json.dumps({"session_id": self.manager.session_id, "cwd": str(self.project),
                           "hook_event_name": event, "stop_hook_active": False,
                           "transcript_path": str(self.manager.path)}).encode()

    def prompt_hook(self) -> str:
        done = subprocess.run([sys.executable, "-m", "actors", "hook", "claude-code"],
                              input=self.hook_input("UserPromptSubmit"), env=self.env,
                              capture_output=True, timeout=WAIT_S, check=True)
        return done.stdout.decode()

    def start_wait(self, *extra: str) -> subprocess.Popen[bytes]:
        source = self.root / "hook-input.json"
        source.write_bytes(self.hook_input())
        with source.open("rb") as stdin:
            return subprocess.Popen(
                [sys.executable, "-m", "actors", "hook", "claude-code", "--wait", *extra],
                stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)


def _finish(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    try:
        _, err = process.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=WAIT_S)
        raise
    return process.returncode, err.decode()


def _still_waiting(process: subprocess.Popen[bytes], seconds: float) -> bool:
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return True
    return False


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path / "home")


def test_an_idle_manager_is_woken_once_by_a_typed_turn_in_a_worker(env: Env) -> None:
    env.manage()
    assert env.prompt_hook() == ""  # its first turn links what exists at its end
    waiting = env.start_wait()
    try:
        assert _still_waiting(waiting, 1.0)  # nothing happened: it waits
        started = time.monotonic()
        env.worker.append(Typed("a person typed into the worker"), Reply("done"))
        code, err = _finish(waiting)
        took = time.monotonic() - started
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait(timeout=WAIT_S)
    assert code == 2, err
    assert f'Session "{env.worker_key}" changed (other actor)' in err
    assert "a person typed" not in err  # no message text
    assert took < 5.0
    assert env.prompt_hook() == ""  # acknowledged: the woken turn's next prompt has none
    waiting = env.start_wait()  # armed again: the next typed turn wakes it once more
    env.worker.append(Typed("typed again"), Reply("done"))
    code, err = _finish(waiting)
    assert code == 2
    assert err.count("changed (other actor)") == 1


def test_a_notice_pending_when_the_turn_ends_is_delivered_at_once(env: Env) -> None:
    env.manage()
    env.prompt_hook()
    env.worker.append(Typed("typed during the manager's turn"), Reply("done"))
    code, err = _finish(env.start_wait())
    assert code == 2
    assert env.worker_key in err


@pytest.mark.parametrize("wake", [None, False], ids=["worker", "no-wake manager"])
def test_a_worker_or_a_manager_without_wakes_is_never_woken_by_a_notice(
        env: Env, wake: bool | None) -> None:
    """It stays only to take messages sent to it (ssa send); a typed turn wakes nothing."""
    if wake is not None:
        env.manage(wake=wake)
    env.prompt_hook()
    waiting = env.start_wait()
    try:
        assert _still_waiting(waiting, 1.0)
        env.worker.append(Typed("a person typed into the other session"), Reply("done"))
        assert _still_waiting(waiting, 2.0)  # no wake
    finally:
        waiting.kill()
        _, err = _finish(waiting)
    assert "changed (other actor)" not in err


def test_the_waiting_hook_ends_with_its_tool_process(env: Env) -> None:
    """A stand-in tool (a Python process) starts the waiting hook, then is killed."""
    env.manage()
    env.prompt_hook()
    script = ("import subprocess, sys; p = subprocess.Popen(sys.argv[1:], "
              "stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
              f"p.stdin.write({env.hook_input()!r}); p.stdin.close(); print(p.pid, flush=True); "
              "import time; time.sleep(600)")
    tool = subprocess.Popen([sys.executable, "-c", script, sys.executable, "-m", "actors",
                             "hook", "claude-code", "--wait"], stdout=subprocess.PIPE,
                            env=env.env, start_new_session=True)
    assert tool.stdout is not None
    hook_pid = int(tool.stdout.readline())
    try:
        time.sleep(1.0)  # let it reach its wait (it checks once first)
        assert Path(f"/proc/{hook_pid}").exists()
        os.kill(tool.pid, signal.SIGKILL)
        tool.wait(timeout=WAIT_S)
        deadline = time.monotonic() + 5.0
        while _alive(hook_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(hook_pid)
    finally:
        tool.stdout.close()
        if _alive(hook_pid):
            os.kill(hook_pid, signal.SIGKILL)
        if tool.poll() is None:
            tool.kill()
            tool.wait(timeout=WAIT_S)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended and not yet reaped by init, is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_newer_waiting_hook_ends_the_older_one_and_one_wakes(env: Env) -> None:
    """A tool that starts a waiting hook at each turn's end keeps one, not a pile."""
    env.manage()
    env.prompt_hook()
    older = env.start_wait()
    newer = None
    try:
        assert _still_waiting(older, 1.0)
        newer = env.start_wait()
        assert older.wait(timeout=WAIT_S) == -signal.SIGTERM
        assert _still_waiting(newer, 0.5)
        env.worker.append(Typed("typed"), Reply("done"))
        code, err = _finish(newer)
        assert code == 2
        assert err.count("changed (other actor)") == 1
    finally:
        for process in (older, newer):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=WAIT_S)
        for process in (older, newer):
            if process is not None:
                process.communicate(timeout=WAIT_S)


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_an_idle_waiting_hook_uses_no_cpu(env: Env) -> None:
    """No polling, and its own reads of the signal log never wake it (a reader's open and
    close make and remove the -wal and -shm files: before that was ignored, one idle
    waiting hook spun at about 7 % of a core)."""
    env.manage()
    env.prompt_hook()
    waiting = env.start_wait()
    try:
        assert _still_waiting(waiting, 1.5)  # its first check done, now blocked
        before = _cpu_ticks(waiting.pid)
        assert _still_waiting(waiting, 2.0)
        assert _cpu_ticks(waiting.pid) - before <= 2  # clock ticks (1/100 s) in 2 s
    finally:
        waiting.kill()
        _finish(waiting)


def test_a_waiting_hook_under_a_headless_run_does_not_wait(env: Env) -> None:
    """``claude -p`` waits for its async hooks: a waiting hook there delivers what is
    pending and ends, instead of holding the run until its timeout."""
    env.manage()
    env.prompt_hook()
    script = ("import subprocess, sys; args = sys.argv[sys.argv.index('--') + 1:]; "
              "p = subprocess.Popen(args, stdin=subprocess.PIPE, stderr=subprocess.PIPE); "
              f"_, err = p.communicate({env.hook_input()!r}, timeout=20); "
              "sys.stdout.write(str(p.returncode)); sys.stdout.write(err.decode())")
    done = subprocess.run([sys.executable, "-c", script, "-p", "--", sys.executable, "-m",
                           "actors", "hook", "claude-code", "--wait"], capture_output=True,
                          env=env.env, timeout=WAIT_S, check=True)
    assert done.stdout.decode() == "0"  # ended at once, nothing pending
    env.worker.append(Typed("typed"), Reply("done"))
    done = subprocess.run([sys.executable, "-c", script, "-p", "--", sys.executable, "-m",
                           "actors", "hook", "claude-code", "--wait"], capture_output=True,
                          env=env.env, timeout=WAIT_S, check=True)
    assert done.stdout.decode().startswith("2")  # pending: delivered, then ended
    assert env.worker_key in done.stdout.decode()


def test_a_worker_of_a_tool_never_used_before_wakes_the_manager(tmp_path: Path) -> None:
    """The worker's tool has no folder yet when the waiting hook starts: the hook watches
    the nearest folder that exists for the next one on the way, so the new session's
    first typed turn still wakes the manager."""
    env = Env(tmp_path / "home")
    shutil.rmtree(env.root / ".codex")
    env.manage()
    env.prompt_hook()
    waiting = env.start_wait()
    try:
        assert _still_waiting(waiting, 1.5)
        thread = str(uuid.uuid4())
        codex = env.root / ".codex" / "sessions" / "2026" / "12" / "06"
        codex.mkdir(parents=True)
        now = time.time_ns() // 1_000_000  # a session started now, after the manager's
        worker = CodexRollout(codex / f"rollout-2026-12-06T02-00-00-{thread}.jsonl",
                              thread_id=thread, cwd=str(env.project),
                              clock=lambda: now)
        worker.append(Typed("the first prompt of a new worker"), Reply("ok"))
        code, err = _finish(waiting)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            _finish(waiting)
    assert code == 2, err
    assert f'Session "agent:main:codex:{thread}" changed (other actor)' in err


def test_many_waiting_hooks_started_at_once_settle_on_one_at_once(env: Env) -> None:
    """Review finding: of eight started together, the losers used to block for the whole
    budget (8 s) before giving up. Now a contender that sees a newer holder ends at once,
    an older holder is ended, and one waiting hook is left within a few seconds."""
    env.manage()
    env.prompt_hook()
    started = [env.start_wait() for _ in range(8)]
    try:
        deadline = time.monotonic() + 4.0
        while sum(p.poll() is None for p in started) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        alive = [p for p in started if p.poll() is None]
        assert len(alive) == 1
        assert all(p.returncode in (0, -signal.SIGTERM) for p in started if p not in alive)
        env.worker.append(Typed("typed"), Reply("done"))
        code, err = _finish(alive[0])
        assert code == 2
        assert err.count("changed (other actor)") == 1
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
            _finish(process)


def test_twenty_rapid_changes_give_one_wake_and_at_most_one_follow_up(env: Env) -> None:
    """The seed's rules on the wake path: one wake for a burst, one more at most for work
    that landed while the first was shown, then nothing pending."""
    env.manage()
    env.prompt_hook()
    first = env.start_wait()
    try:
        assert _still_waiting(first, 1.0)
        for i in range(20):
            env.worker.append(Typed(f"rapid change {i}"), Reply("ok"))
        code, err = _finish(first)
    finally:
        if first.poll() is None:
            first.kill()
            _finish(first)
    assert code == 2
    assert err.count("changed (other actor)") == 1
    follow_up = env.start_wait()  # what the tool starts at the woken turn's end
    try:
        if not _still_waiting(follow_up, 2.0):
            code, err = _finish(follow_up)
            assert code == 2
            assert err.count("changed (other actor)") == 1  # the interleaved work, once
            follow_up = env.start_wait()
            assert _still_waiting(follow_up, 2.0)  # and then nothing more
    finally:
        follow_up.kill()
        _finish(follow_up)
    assert env.prompt_hook() == ""  # nothing left pending


def test_a_corrupt_signal_log_under_a_waiting_hook_is_one_line_not_a_traceback(
        env: Env) -> None:
    """Review finding: the waiting hook died with a traceback (exit 1) when the database
    became unreadable; now it says one line and keeps waiting, as the prompt hook does."""
    env.manage()
    env.prompt_hook()
    waiting = env.start_wait()
    try:
        assert _still_waiting(waiting, 1.0)
        db = env.root / "state" / "state.sqlite"
        with db.open("r+b") as file:
            file.write(b"garbage!" * 512)
        env.worker.append(Typed("typed"), Reply("ok"))
        assert _still_waiting(waiting, 2.0)
    finally:
        waiting.kill()
        _, err = _finish(waiting)
    assert "Traceback" not in err
    assert "ssa hook:" in err


def test_a_change_that_lands_while_the_signal_log_is_locked_still_wakes(env: Env) -> None:
    """Review finding: a check that failed on a lock held 3 s went back to waiting with
    the work unchecked (no wake until the next prompt). Now it is tried again."""
    import apsw

    env.manage()
    env.prompt_hook()
    waiting = env.start_wait()
    locker = apsw.Connection(str(env.root / "state" / "state.sqlite"))
    try:
        assert _still_waiting(waiting, 1.0)
        locker.execute("BEGIN EXCLUSIVE")
        env.worker.append(Typed("typed while locked"), Reply("ok"))
        assert _still_waiting(waiting, 3.5)  # the check failed on the lock
        locker.execute("ROLLBACK")  # released without a write: no change to notice
        code, err = _finish(waiting)
    finally:
        locker.close()
        if waiting.poll() is None:
            waiting.kill()
            _finish(waiting)
    assert code == 2
    assert env.worker_key in err


def test_a_waiting_hook_whose_state_folder_was_removed_ends(env: Env) -> None:
    """Review finding: after the state folder was removed and made again, two waiting
    hooks of one session stayed alive. The old one ends when its slot is gone."""
    env.manage()
    env.prompt_hook()
    waiting = env.start_wait()
    try:
        assert _still_waiting(waiting, 1.0)
        shutil.rmtree(env.root / "state")
        code, _ = _finish(waiting)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            _finish(waiting)
    assert code == 0


def test_without_room_for_more_watches_the_waiting_hook_checks_periodically(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review finding: with the inotify watch limit reached, the waiting hook sat deaf.
    Now a folder it cannot watch makes it check every ``fallback_s``."""
    from actors.agents import waiter as waiter_mod

    with waiter_mod.ChangeWaiter(None, fallback_s=0.2) as watcher:
        assert watcher.notified
        inotify = watcher._inotify
        assert inotify is not None

        def full(path: str, mask: int) -> int:
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(inotify, "add_watch", full)
        watcher.watch([tmp_path])
        assert watcher.degraded
        started = time.monotonic()
        assert watcher.wait(None) == "timeout"
        assert time.monotonic() - started < 2.0


def test_the_turn_gate_holds_notices_until_the_turn_ended(
        tmp_path: Path) -> None:
    """Review finding: a waiting hook that stays (OpenCode, Pi, Codex, Qwen Code) pushed one
    turn per change (19 for 20 changes 0.1 s apart). After a delivery the next notice now
    waits for the turn it started: an ``idle`` line from the plugin (stream paths), or the
    session's transcript changing and going quiet (command paths)."""
    from actors.agents import turngate

    read, write = os.pipe()
    with os.fdopen(read, "rb", buffering=0) as plugin, os.fdopen(write, "wb") as pipe:
        gate = turngate.TurnGate(None, stdin=plugin)
        assert gate.fd == read
        assert gate.open()
        gate.close()
        assert not gate.open()  # a change now waits
        pipe.write(b"noise\n")
        pipe.flush()
        gate.read_input()
        assert not gate.open()
        pipe.write(b"idle\n")
        pipe.flush()
        gate.read_input()
        assert gate.open()  # the turn ended: the follow-up may go
    left, right = socket.socketpair()  # Bun gives its children socket pairs, not pipes
    with left, right, left.makefile("rb", buffering=0) as plugin_end:
        assert turngate.TurnGate(None, stdin=plugin_end).fd is not None
    now = [1000.0]  # an injected clock: no sleeping

    def clock() -> float:
        return now[0]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("a\n")
    os.utime(transcript, (1, 1))
    gate = turngate.TurnGate(str(transcript), stdin=None, clock=clock)
    gate.close()
    assert not gate.open()
    now[0] += 1.0
    os.utime(transcript, (2, 2))  # the woken turn writes
    assert not gate.open()  # the turn runs
    now[0] += turngate.QUIET_S - 0.1
    assert not gate.open()  # not quiet long enough yet
    now[0] += 0.2
    assert gate.open()  # and went quiet
    gate.close()
    now[0] += turngate.GATE_MAX_S + 0.1
    assert gate.open()  # at the latest after GATE_MAX_S


def test_the_turn_gate_reads_whole_lines_without_blocking(tmp_path: Path) -> None:
    """Second review: an ``idle`` waiting before a delivery reopened the gate at once; a
    half-written line blocked the waiting hook; a second line in one write was left in a
    buffer; a long line's tail counted as ``idle``."""
    from actors.agents import turngate

    read, write = os.pipe()
    with os.fdopen(read, "rb", buffering=0) as plugin, os.fdopen(write, "wb") as pipe:
        gate = turngate.TurnGate(None, stdin=plugin)

        def say(data: bytes) -> None:
            pipe.write(data)
            pipe.flush()
            gate.read_input()

        pipe.write(b"idle\n")  # the turn before's end, still in the pipe
        pipe.flush()
        gate.close()
        gate.read_input()
        assert not gate.open()
        say(b"idl")  # half a line: read without blocking, not yet a line
        assert not gate.open()
        say(b"e\n")
        assert gate.open()
        gate.close()
        say(b"hello garbage\nidle\n")  # two lines in one write: both seen
        assert gate.open()
        gate.close()
        say(b"y" * 4096 + b"idle\n")  # one long line is no idle
        assert not gate.open()
        say(b"idle\n")
        assert gate.open()
