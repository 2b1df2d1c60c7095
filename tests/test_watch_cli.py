"""``ssa watch``: discovery, adoption summary, reports, --json, signals, empty catalogs."""

from __future__ import annotations

import argparse
import io
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import msgspec
import pytest

from actors import Gateway
from actors.cli.watch import run_watch
from actors.upstream.catalog import default_catalogs, discover
from tests._upstream_rows import NOT_A_PI_SESSION, claude_user, pi_header, pi_user
from tests.conftest import FIXTURES, needs_fixtures

TIMEOUT = 20.0


class AppendOnAdopt(io.StringIO):
    """stdout that appends ``rows`` to ``path`` once the adoption summary is printed."""

    def __init__(self, path: Path, rows: bytes) -> None:
        super().__init__()
        self.path, self.rows = path, rows

    def write(self, text: str) -> int:
        if text.startswith(("adopted ", '{"adopted"')):
            with self.path.open("ab") as handle:
                handle.write(self.rows)
        return super().write(text)


def _catalog(tmp_path: Path) -> tuple[Path, Path]:
    claude = tmp_path / "claude"
    (claude / "-work").mkdir(parents=True)
    session = claude / "-work" / "abc.jsonl"
    session.write_bytes(claude_user("history"))
    pi = tmp_path / "pi" / "--work--"
    pi.mkdir(parents=True)
    (pi / "2026-06-05T05-24-28-246Z_legacy.jsonl").write_bytes(NOT_A_PI_SESSION + pi_user("x"))
    return claude, session


def _args(tmp_path: Path, **kw: object) -> argparse.Namespace:
    base: dict[str, object] = {"db": tmp_path / "state.sqlite", "claude": None, "codex": None,
                               "opencode": None, "pi": None, "watcher": "agent:main:main",
                               "interval": 0.001, "scans": 1, "json": False}
    base.update(kw)
    return argparse.Namespace(**base)


def test_watch_adopts_reports_skips_and_prints_each_drained_notice(tmp_path: Path) -> None:
    claude, session = _catalog(tmp_path)
    out = AppendOnAdopt(session, claude_user("typed while watched"))
    args = _args(tmp_path, claude=[str(claude)], pi=[str(tmp_path / "pi")])
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(
        "adopted 1 session (claude 1); not monitored: 1 not a Pi session file")
    assert lines[1] == ('notice: Session "agent:main:claude:abc" changed (other actor). '
                        'Reconcile before acting: session_status sessionKey '
                        '"agent:main:claude:abc" changesSince 1.')
    assert lines[2] == "  name: history"  # its first typed words, read from the transcript
    assert lines[3] == f"  in claude transcript {session.resolve()}, project /work"
    assert lines[4] == "  #3 human_direct_message by human: human message via claude"


def test_watch_json_prints_one_object_per_notice(tmp_path: Path) -> None:
    claude, session = _catalog(tmp_path)
    out = AppendOnAdopt(session, claude_user("one") + claude_user("two"))
    assert run_watch(_args(tmp_path, claude=[str(claude)], json=True), out=out,
                     err=io.StringIO()) == 0
    summary, record = (msgspec.json.decode(line) for line in out.getvalue().splitlines()[:2])
    assert summary["adopted"] == {"claude": 1}
    assert record["sessionKey"] == "agent:main:claude:abc"
    assert record["name"] == "history"
    assert [(e["kind"], e["payload"]["turns"], len(e["payload"]["source"]["rows"]))
            for e in record["events"]] == [("human_direct_message", 2, 2)]


def test_watch_with_no_catalog_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME", "OPENCODE_DB",
                 "PI_CODING_AGENT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    out = io.StringIO()
    assert run_watch(_args(tmp_path), out=out, err=io.StringIO()) == 0
    text = out.getvalue()
    assert "no session catalogs found" in text
    assert str(tmp_path / "empty-home" / ".claude" / "projects") in text
    assert "--claude DIR" in text


def test_default_catalogs_honour_the_environment(tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": f"{tmp_path}/a,{tmp_path}/b", "CODEX_HOME": f"{tmp_path}/cx",
           "XDG_DATA_HOME": f"{tmp_path}/data", "PI_CODING_AGENT_DIR": f"{tmp_path}/pi"}
    found = default_catalogs(env, home=tmp_path)
    assert found["claude"] == [str(tmp_path / "a" / "projects"), str(tmp_path / "b" / "projects")]
    assert found["codex"] == [str(tmp_path / "cx" / "sessions")]
    assert found["opencode"] == [str(tmp_path / "data" / "opencode" / "opencode.db")]
    assert found["pi"] == [str(tmp_path / "pi" / "sessions")]
    assert default_catalogs({"OPENCODE_DB": "/abs/x.db"}, home=tmp_path)["opencode"] == [
        "/abs/x.db"]


def test_a_claude_config_dir_with_a_comma_in_its_name_is_one_folder(tmp_path: Path) -> None:
    """Adversary round (stop 39): ``/x/cfg, with comma`` was split into ``/x/cfg`` and a
    relative ``with comma`` that each hook looked for in its own project folder."""
    one = f"{tmp_path}/cfg, with comma"
    assert default_catalogs({"CLAUDE_CONFIG_DIR": one}, home=tmp_path)["claude"] == [
        f"{one}/projects"]
    both = f"{tmp_path}/a, {tmp_path}/b"  # every part absolute: a list
    assert default_catalogs({"CLAUDE_CONFIG_DIR": both}, home=tmp_path)["claude"] == [
        f"{tmp_path}/a/projects", f"{tmp_path}/b/projects"]


@needs_fixtures
def test_discovery_finds_sessions_in_each_layout(tmp_path: Path) -> None:
    codex = tmp_path / "codex" / "2026" / "09" / "02"
    codex.mkdir(parents=True)
    name = "rollout-2026-09-02T15-58-14-01a06421-3bf7-7ed2-a618-e42b6c961905.jsonl"
    shutil.copyfile(FIXTURES / "codex" / "codex-0.152.1-tui-paginated.jsonl", codex / name)
    found = list(discover("codex", tmp_path / "codex"))
    assert [c.thread_id for c in found] == ["01a06421-3bf7-7ed2-a618-e42b6c961905"]
    db = tmp_path / "opencode.db"
    shutil.copyfile(FIXTURES / "opencode" / "opencode-1.18.33-generated.db", db)
    sessions = list(discover("opencode", db))
    assert len(sessions) == 4  # six sessions, two of them children
    assert list(discover("claude", tmp_path / "nowhere")) == []


def test_sigterm_stops_watch_cleanly(tmp_path: Path) -> None:
    claude, _ = _catalog(tmp_path)
    db = tmp_path / "state.sqlite"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "actors", "watch", "--db", str(db), "--claude", str(claude),
         "--interval", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().decode()  # printed after adoption
        assert first.startswith("adopted 1 session")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=TIMEOUT)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert run_watch(_args(tmp_path, claude=[str(claude)], scans=0), out=io.StringIO(),
                     err=io.StringIO()) == 0  # the database reopens consistently


class CreateOnAdopt(io.StringIO):
    """stdout that creates a new session file once the adoption summary is printed."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def write(self, text: str) -> int:
        if text.startswith("adopted "):
            self.path.write_bytes(claude_user("history of a new session"))
        return super().write(text)


def test_sessions_created_after_watch_started_are_adopted_and_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from actors.cli import watch as _watch

    claude, _ = _catalog(tmp_path)
    late = claude / "-work" / "late.jsonl"
    original = _watch._report
    calls: list[int] = []

    def report_then_type(gw: Gateway, watcher: str, as_json: bool, out: TextIO,
                         *rest: _watch.Handoff | None) -> int:
        calls.append(1)
        if len(calls) == 1:  # after scan 1 adopted late.jsonl at its end: a person types
            with late.open("ab") as handle:
                handle.write(claude_user("typed into the late session"))
        return original(gw, watcher, as_json, out, *rest)

    monkeypatch.setattr(_watch, "_report", report_then_type)
    out = CreateOnAdopt(late)
    # --poll-only: the adoption at the interval's listing (a directory event would
    # adopt it at once: test_a_session_created_in_a_new_folder_is_adopted_from_...).
    assert run_watch(_args(tmp_path, claude=[str(claude)], scans=2, poll_only=True), out=out,
                     err=io.StringIO()) == 0
    lines = out.getvalue().splitlines()
    assert lines[1] == (f"new claude session agent:main:claude:late ({late}): watched, "
                        "read from its start")
    # Created while watching, so its first prompt (the one that made the file)
    # is reported, and so is the turn typed after it: two notices.
    notices = [line for line in lines if line.startswith("notice: ")]
    assert len(notices) == 2
    assert all('sessionKey "agent:main:claude:late"' in n for n in notices)
    human = [line for line in lines if "human_direct_message by human" in line]
    assert len(human) == 2


def test_a_session_that_appears_with_an_old_time_is_adopted_at_its_end_and_announced(
    tmp_path: Path,
) -> None:
    claude, _ = _catalog(tmp_path)
    moved = claude / "-work" / "moved.jsonl"
    legacy = tmp_path / "pi" / "--work--" / "2026-06-05T05-24-28-246Z_late.jsonl"

    class MoveInOnAdopt(io.StringIO):
        def write(self, text: str) -> int:
            if text.startswith('{"adopted"'):  # the summary: now sessions appear
                moved.write_bytes(claude_user("an old session, moved in"))
                old = time.time() - 3600
                os.utime(moved, (old, old))  # mv keeps the modification time
                legacy.write_bytes(NOT_A_PI_SESSION + pi_user("x"))
            return super().write(text)

    out = MoveInOnAdopt()
    args = _args(tmp_path, claude=[str(claude)], pi=[str(tmp_path / "pi")], json=True)
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    announced = {next(iter(r)): r[next(iter(r))] for r in records[1:] if len(r) == 1}
    assert announced["adoptedSession"] == {
        "source": "claude", "sessionKey": "agent:main:claude:moved", "path": str(moved),
        "fromStart": False}  # its turns are old: not reported
    assert announced["notMonitoredSession"]["reason"] == "not a Pi session file"
    assert not [r for r in records if "notice" in r]


def test_files_whose_names_are_not_utf8_are_skipped_not_fatal(tmp_path: Path) -> None:
    claude, session = _catalog(tmp_path)
    odd = Path(os.fsdecode(bytes(claude / "-work") + b"/caf\xff.jsonl"))
    odd.write_bytes(claude_user("x"))
    out = AppendOnAdopt(session, claude_user("still watched"))
    assert run_watch(_args(tmp_path, claude=[str(claude)]), out=out, err=io.StringIO()) == 0
    first = out.getvalue().splitlines()[0]
    assert first.startswith("adopted 1 session (claude 1)")
    assert "1 unusable" in first
    assert "notice:" in out.getvalue()


def test_a_given_catalog_that_is_missing_or_empty_is_reported(tmp_path: Path) -> None:
    err = io.StringIO()
    empty = tmp_path / "empty"
    empty.mkdir()
    args = _args(tmp_path, claude=[str(tmp_path / "nope")], pi=[str(empty)], scans=0)
    assert run_watch(args, out=io.StringIO(), err=err) == 0
    assert f"--claude {tmp_path / 'nope'} does not exist" in err.getvalue()
    assert f"--pi {empty} holds no sessions" in err.getvalue()


def test_json_mode_prints_only_json_lines(tmp_path: Path) -> None:
    claude, session = _catalog(tmp_path)
    out = AppendOnAdopt(session, claude_user("typed"))
    assert run_watch(_args(tmp_path, claude=[str(claude)], json=True), out=out,
                     err=io.StringIO()) == 0
    for line in out.getvalue().splitlines():
        assert isinstance(msgspec.json.decode(line), dict)


def test_the_same_session_id_in_two_folders_gets_two_keys(tmp_path: Path) -> None:
    claude, session = _catalog(tmp_path)
    twin = claude / "-other" / "abc.jsonl"
    twin.parent.mkdir()
    twin.write_bytes(claude_user("history"))
    out = AppendOnAdopt(session, claude_user("typed into the original"))
    assert run_watch(_args(tmp_path, claude=[str(claude)]), out=out, err=io.StringIO()) == 0
    text = out.getvalue()
    assert text.startswith("adopted 2 sessions (claude 2)")
    assert text.count("notice: ") == 1  # both watched; only the one typed into changed


@pytest.mark.parametrize("interval", ["inf", "nan", "0", "-1", "1e300"])
def test_watch_rejects_unusable_intervals(interval: str, capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    from actors.cli.app import main

    assert main(["watch", "--db", str(tmp_path / "s.sqlite"), "--interval", interval]) == 1
    assert "--interval" in capsys.readouterr().err


def test_library_warnings_reach_the_terminal(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from actors.cli.app import _show_library_warnings

    _show_library_warnings()
    pi = tmp_path / "pi3" / "--work--"
    pi.mkdir(parents=True)
    session = pi / "2026-06-05T05-24-28-246Z_current.jsonl"
    session.write_bytes(pi_header(3) + pi_user("history"))
    out = AppendOnAdopt(session, b"{not json}\n" + pi_user("behind the bad line"))
    assert run_watch(_args(tmp_path, pi=[str(tmp_path / "pi3")]), out=out,
                     err=io.StringIO()) == 0
    assert "notice:" in out.getvalue()  # read past the bad line (issue 25 item 13)
    assert "1 complete pi line(s) are not JSON objects" in capsys.readouterr().err


def test_watch_refuses_a_watcher_that_is_not_agent_qualified(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    from actors.cli.app import main

    assert main(["watch", "--db", str(tmp_path / "s.sqlite"), "--watcher", "main"]) == 1
    err = capsys.readouterr().err
    assert "--watcher must be an agent-qualified session key" in err
    assert err.count("\n") == 1


def test_a_notice_is_printed_before_it_is_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from actors.cli import watch as _watch

    claude, session = _catalog(tmp_path)
    out = AppendOnAdopt(session, claude_user("typed while watched"))

    def dying_drain(self: Gateway, watcher: str) -> list[str]:
        raise KeyboardInterrupt  # as if killed between printing and acknowledging

    monkeypatch.setattr(_watch.Gateway, "drain", dying_drain)
    with pytest.raises(KeyboardInterrupt):
        run_watch(_args(tmp_path, claude=[str(claude)], poll_only=True), out=out,
                  err=io.StringIO())
    assert "notice: " in out.getvalue()  # already on stdout: a restart repeats, never loses
    assert out.getvalue().splitlines()[0].endswith("; file notifications off")  # --poll-only


def test_a_pi_or_codex_file_empty_when_found_is_adopted_once_its_header_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: an empty or half-written header was 'not monitored' for the whole run."""
    from actors.cli import watch as _watch

    pi = tmp_path / "pi" / "--work--"
    pi.mkdir(parents=True)
    early = pi / "2026-06-05T05-24-28-246Z_early.jsonl"
    early.write_bytes(pi_header(3)[:20])  # being written when the watch starts
    late = pi / "2026-06-05T05-24-29-246Z_late.jsonl"
    original = _watch._report
    calls: list[int] = []

    def write_the_headers(gw: Gateway, watcher: str, as_json: bool, out: TextIO,
                          *rest: _watch.Handoff | None) -> int:
        calls.append(1)
        if len(calls) == 1:
            late.write_bytes(b"")  # appears empty ...
        elif len(calls) == 2:  # ... and both are written after the next scan
            early.write_bytes(pi_header(3) + pi_user("first prompt of early"))
            late.write_bytes(pi_header(3) + pi_user("first prompt of late"))
        return original(gw, watcher, as_json, out, *rest)

    monkeypatch.setattr(_watch, "_report", write_the_headers)
    out = io.StringIO()
    assert run_watch(_args(tmp_path, pi=[str(tmp_path / "pi")], scans=3), out=out,
                     err=io.StringIO()) == 0
    text = out.getvalue()
    assert text.startswith("adopted 0 sessions (none); not monitored: 1 unreadable")  # at start
    assert ": not monitored (" not in text  # never announced as such
    assert text.count(": watched, read from its start") == 2
    assert text.count("human_direct_message by human") == 2  # both first prompts


@pytest.mark.timeout(60)
def test_a_session_created_in_a_new_folder_is_adopted_from_the_directory_event(
    tmp_path: Path,
) -> None:
    """Issue 25 item 2: a new transcript (in a new project, date or Pi folder) is adopted
    and its first prompt reported from the directory event, not after the fallback
    scan (``--interval 60`` here; every wait is far shorter)."""
    from actors.testing import ClaudeCodeTranscript, CodexRollout, PiSession, Typed

    roots = {s: tmp_path / s for s in ("claude", "codex", "pi")}
    for root in roots.values():
        root.mkdir()
    known = roots["claude"] / "-known" / "known.jsonl"
    known.parent.mkdir()
    known.write_bytes(claude_user("history"))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    command = [sys.executable, "-m", "actors", "watch", "--db", str(tmp_path / "s.sqlite"),
               "--interval", "60", "--json"]
    for source, root in roots.items():
        command += [f"--{source}", str(root)]
    with (tmp_path / "stderr").open("wb") as stderr:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, env=env)
    assert proc.stdout is not None
    lines = _Lines(proc.stdout)
    try:
        first = lines.next(TIMEOUT)
        assert first is not None
        assert "adopted" in json.loads(first)
        claude = roots["claude"] / "-home-user-new" / "c0ffee00-0000-4000-8000-000000000001.jsonl"
        claude.parent.mkdir()
        ClaudeCodeTranscript(claude).append(Typed("first prompt"))
        day = roots["codex"] / "2027" / "01" / "02"
        day.mkdir(parents=True)
        thread = "01a06421-3bf7-7ed2-a618-e42b6c961999"
        CodexRollout(day / f"rollout-2027-01-02T08-00-00-{thread}.jsonl",
                     thread_id=thread).append(Typed("first prompt"))
        pi = roots["pi"] / "--home-user-new--" / "2027-01-02T08-00-00-000Z_p1.jsonl"
        pi.parent.mkdir()
        PiSession(pi, session_id="p1").append(Typed("first prompt"))
        expected = {f"agent:main:claude:{claude.stem}", f"agent:main:codex:{thread}",
                    "agent:main:pi:p1"}
        noticed: set[str] = set()
        deadline = time.monotonic() + 20  # the fallback scan would come after 60 s
        while noticed != expected and time.monotonic() < deadline:
            line = lines.next(deadline - time.monotonic())
            if line is None:
                break
            record = json.loads(line)
            if "notice" in record:
                noticed.add(record["sessionKey"])
        assert noticed == expected
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=TIMEOUT)
            lines.join(TIMEOUT)
            proc.stdout.close()


class _Lines:
    """A subprocess's stdout lines, read by a thread into a queue (bounded waits, no sleep)."""

    def __init__(self, stream: typing.IO[bytes]) -> None:
        self._queue: queue.Queue[bytes] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: typing.IO[bytes]) -> None:
        for line in stream:
            self._queue.put(line)

    def next(self, timeout: float) -> bytes | None:
        """The next line within ``timeout`` s, or ``None``."""
        try:
            return self._queue.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def join(self, timeout: float) -> None:
        """Wait for the reader to see EOF (the process ended)."""
        self._thread.join(timeout)


@pytest.mark.parametrize("flag", ["--claude", "--codex", "--opencode", "--pi"])
def test_a_mistyped_catalog_path_is_a_usage_error(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 25 item 12: ``ssa watch --claude /typo`` used to watch nothing forever."""
    from actors.cli.app import main

    typo = tmp_path / "typo"
    assert main(["watch", "--db", str(tmp_path / "s.sqlite"), flag, str(typo),
                 "--scans", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{flag} {typo} does not exist" in err
    assert not (tmp_path / "s.sqlite").exists()  # refused before anything was opened


def test_a_new_watcher_is_not_told_turns_typed_before_it_started(tmp_path: Path) -> None:
    """Issue 34 item 10: a session another watcher linked holds a turn nobody read yet;
    a new ``ssa watch --watcher X`` reads it before it watches, so X is not told."""
    claude, session = _catalog(tmp_path)
    with Gateway.open(tmp_path / "state.sqlite", monitor=False) as gw:
        assert gw.adopt("agent:main:claude:abc", source="claude", path=session) is not None
        assert gw.watch("agent:main:other", "agent:main:claude:abc")
        gw.release_leases()  # that watcher stopped before reading it
    with session.open("ab") as handle:
        handle.write(claude_user("typed before the new watcher started"))
    out = AppendOnAdopt(session, claude_user("typed while watched"))
    args = _args(tmp_path, claude=[str(claude)], watcher="agent:main:new")
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    notices = [line for line in out.getvalue().splitlines() if line.startswith("  #")]
    assert notices == ["  #4 human_direct_message by human: human message via claude"]
    with Gateway.open(tmp_path / "state.sqlite", monitor=False) as gw:
        assert len(gw.pending_notices("agent:main:other")) == 1  # the earlier turn, for it


def test_a_change_after_a_notices_watermark_is_printed_once(
    open_gateway: Callable[..., Gateway],
) -> None:
    """Adversary finding (round 34): ``ssa watch`` listed every change up to the head
    under a notice whose acknowledgement covers only its frozen watermark, and the
    follow-up listed the change after it again."""
    from actors.cli.watch import _report

    gw = open_gateway()
    assert gw.watch("agent:main:w", "agent:main:t")
    assert gw.human_message("agent:main:t", channel="x") is not None  # the notice opens
    assert gw.human_message("agent:main:t", channel="x") is not None  # after its watermark
    listed: list[list[str]] = []
    for _ in range(3):
        out = io.StringIO()
        _report(gw, "agent:main:w", False, out)
        listed.append([line.split()[0] for line in out.getvalue().splitlines()
                       if line.startswith("  #")])
    assert listed == [["#1"], ["#2"], []]
