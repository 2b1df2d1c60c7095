"""The ``ssa`` command line: demo, status and list, and its error handling."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import msgspec
import pytest

from actors import Gateway
from actors.cli.app import main
from actors.errors import InvalidArgument, SchemaError
from actors.upstream.sources import BUILT_IN
from tests._table import table_rows
from tests._upstream_rows import claude_user
from tests.conftest import CHILD, FIXTURES, WATCHER, SignalLogDb, needs_fixtures


def test_demo_runs_to_completion_and_shows_one_notice_for_twenty_changes(
    db: SignalLogDb, capsys: pytest.CaptureFixture[str]
) -> None:
    location = str(db.location)
    if isinstance(db.location, Path):
        db.location.parent.mkdir()  # an explicit --db names a file in an existing directory
    assert main(["demo", "--db", location]) == 0
    out = capsys.readouterr().out
    assert "manager's queued notices: 1" in out
    assert "20 events, historyGap False" in out
    assert "manager's queued notices after reopening: 1" in out
    assert "scan_upstream recorded: ['human message via claude']" in out
    assert out.count("(linked)") == len(BUILT_IN)  # every registered source's sample
    assert out.rstrip().endswith(f"--db {shlex.quote(location)}")  # a command to paste
    assert main(["demo", "--db", location]) == 1  # never over an old one
    err = capsys.readouterr().err
    assert ("exists" if db.name == "sqlite" else "holds sessions") in err
    assert err.count("\n") == 1


def test_status_and_list_read_an_existing_database(
    open_gateway: Callable[..., Gateway], db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gw = open_gateway()
    spawn = gw.spawn_subagent(WATCHER, CHILD, run_id="r1")
    assert spawn is not None
    gw.human_message(CHILD, channel="telegram")
    gw.close()
    assert main(["status", CHILD, "--changes-since", "0", "--db", str(db_path)]) == 0
    status = msgspec.json.decode(capsys.readouterr().out)
    assert status["stateVersion"] == 2
    assert [e["kind"] for e in status["stateChanges"]["events"]] == [
        "child_spawned", "human_direct_message"]
    assert main(["list", "--db", str(db_path)]) == 0
    rows = {r["SESSION"]: r for r in table_rows(capsys.readouterr().out)}
    assert rows[CHILD]["STATE VERSION"] == "2"
    assert rows[CHILD]["UPSTREAM"] == "-"
    assert "AGENT" not in rows[CHILD]  # one agent: no AGENT column


def test_user_mistakes_print_one_line_and_exit_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", "--db", str(tmp_path / "missing.sqlite")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ssa: no database at")
    assert err.count("\n") == 1
    assert main(["status", "bad\nkey", "--db", str(tmp_path / "x")]) == 1
    assert "control or format character" in capsys.readouterr().err
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database" * 100)
    assert main(["list", "--db", str(garbage)]) == 1
    assert "cannot read" in capsys.readouterr().err
    foreign = tmp_path / "foreign.sqlite"
    conn = apsw.Connection(str(foreign))
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    for argv in (["list", "--db", str(foreign)], ["status", "agent:main:x", "--db", str(foreign)]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err == f"ssa: {foreign} is not a session-state database\n"
    with pytest.raises(SystemExit) as info:
        main(["status"])
    assert info.value.code == 2




@needs_fixtures
def test_classify_prints_one_decision_per_line_using_the_monitors_classifier(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = FIXTURES / "claude-code" / "cc-2.1.37-cli-prompt-tools-exit.jsonl"
    assert main(["classify", "--source", "claude", str(path)]) == 0
    rows = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == len(path.read_bytes().splitlines())
    assert [r["line"] for r in rows if r["human"]] == [3]
    assert rows[20] == {"line": 20, "human": False, "reason": "command"}


@needs_fixtures
def test_classify_reports_bad_opencode_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    db = tmp_path / "opencode.db"
    db.write_bytes((FIXTURES / "opencode" / "opencode-1.18.33-generated.db").read_bytes())
    assert main(["classify", "--source", "opencode", str(db), "--session", "ses_nope"]) == 1
    assert capsys.readouterr().err.startswith("ssa: no OpenCode session 'ses_nope'")
    assert main(["classify", "--source", "opencode", str(db)]) == 1
    assert capsys.readouterr().err == (
        f"ssa: --session ID is required for opencode; {db} holds 6 sessions: "
        "ses_dd45483e1ffey2Pb2WIeXKDqPz, ses_dd4543c24ffejqmAZxy1b9Lb38, "
        "ses_dd4537039ffecBg3ADoT7o4TaI, ses_dd452c4cfffeCUzx6jdvKQ9r9k, "
        "ses_dd4546f3affe14h47P40rzt6ym, ses_dd4546a7effeDNtDGa28ss6V3D\n")
    store = FIXTURES / "opencode" / "opencode-1.1.65-storage"
    assert main(["classify", "--source", "opencode", str(store)]) == 1
    assert capsys.readouterr().err.startswith(
        f"ssa: --session ID is required for opencode; {store} holds 5 sessions: "
        "ses_dd452a71fffedoiirWANmYOPX4, ")
    assert main(["classify", "--source", "pi", str(tmp_path)]) == 1
    assert "not a regular file" in capsys.readouterr().err


@needs_fixtures
def test_the_scan_benchmark_runs_on_the_real_fixtures(capsys: pytest.CaptureFixture[str]) -> None:
    from scripts import bench_scan

    assert bench_scan.main(["--repeat", "1", "--fixtures", str(FIXTURES)]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()[1:]] == [
        "claude", "codex", "pi", "opencode"]


@pytest.mark.parametrize("command", [["watch", "--scans", "0"], ["demo"]])
def test_an_explicit_db_needs_an_existing_directory_and_creates_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str],
) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "x.sqlite"
    assert main([*command, "--db", str(missing)]) == 1
    err = capsys.readouterr().err
    assert err == (f"ssa: --db {missing}: neither {missing.parent} nor its parent "
                   f"{missing.parent.parent} exists (create them first: only the database's "
                   "own folder is created, in a folder that exists)\n")
    assert not (tmp_path / "no").exists()
    assert main([*command, "--db", str(tmp_path)]) == 1  # a directory, not a file
    assert capsys.readouterr().err.startswith(f"ssa: --db {tmp_path} is a directory")
    (tmp_path / "file").write_text("x")
    assert main([*command, "--db", str(tmp_path / "file" / "x.sqlite")]) == 1
    assert capsys.readouterr().err.endswith(f"{tmp_path / 'file'} is not a directory\n")
    assert sorted(p.name for p in tmp_path.parent.glob(f"{tmp_path.name}*")) == [tmp_path.name]


def test_the_default_location_gets_its_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SSA_STATE_DIR", str(tmp_path / "state" / "ssa"))
    (tmp_path / "claude").mkdir()
    assert main(["watch", "--scans", "0", "--claude", str(tmp_path / "claude")]) == 0
    capsys.readouterr()
    assert (tmp_path / "state" / "ssa" / "state.sqlite").is_file()
    assert oct((tmp_path / "state").stat().st_mode & 0o777) == "0o700"


def test_a_failed_open_leaves_no_lock_file_beside_the_users_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# not a database\n" * 100)
    (tmp_path / "claude").mkdir()
    assert main(["watch", "--db", str(notes), "--scans", "0",
                 "--claude", str(tmp_path / "claude")]) == 1
    assert capsys.readouterr().err.endswith(f"cannot open {notes}: file is not a database\n")
    foreign = tmp_path / "foreign.sqlite"
    conn = apsw.Connection(str(foreign))
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    with pytest.raises(SchemaError, match="not a session-state database"):
        Gateway.open(foreign, monitor=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claude", "foreign.sqlite", "notes.md"]
    assert notes.read_text() == "# not a database\n" * 100


def test_a_postgresql_url_is_never_taken_for_a_file_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    url = "postgresql://nobody@127.0.0.1:1/ssa?connect_timeout=2"
    for command in (["watch", "--scans", "0", "--claude", str(tmp_path)], ["demo"]):
        assert main([*command, "--db", url]) == 1
        err = capsys.readouterr().err
        assert err.startswith("ssa: cannot connect to postgresql://nobody@127.0.0.1:1/ssa")
        assert err.count("\n") == 1
    for mistyped in ("postgresql:/127.0.0.1/ssa", "postgres//127.0.0.1/ssa"):
        with pytest.raises(SystemExit) as info:
            main(["watch", "--db", mistyped])
        assert info.value.code == 2
        assert "starts with postgresql://" in capsys.readouterr().err
        with pytest.raises(InvalidArgument):
            Gateway.open(mistyped, monitor=False)
    assert list(tmp_path.iterdir()) == []  # no "postgresql:" directory, no file


def test_status_of_a_key_never_seen_is_version_0_as_session_status_with_a_hint(
    open_gateway: Callable[..., Gateway], db_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """The CLI exited 1 where the MCP tool (and the contract's session_status) answer 0."""
    gw = open_gateway()
    gw.create_session("agent:main:quiet")  # known, no changes yet
    assert gw.session_status("agent:main:nobody").state_version == 0  # the contract
    gw.close()
    assert main(["status", "agent:main:quiet", "--db", str(db_path)]) == 0
    assert capsys.readouterr() == ('{"stateVersion":0}\n', "")
    assert main(["status", "agent:main:nobody", "--db", str(db_path)]) == 0
    out, err = capsys.readouterr()
    assert out == '{"stateVersion":0}\n'
    assert err == (f"ssa: note: no session agent:main:nobody in {db_path} yet, so version 0 "
                   f"(ssa list --db {shlex.quote(str(db_path))} shows the sessions it knows)\n")
    assert main(["status", "agent:main:nobody", "--changes-since", "0", "--db",
                 str(db_path)]) == 0
    assert msgspec.json.decode(capsys.readouterr().out)["stateVersion"] == 0
    assert main(["status", "agent:main:quiet", "--agent-id", "ops", "--db", str(db_path)]) == 0
    assert "no session agent:main:quiet of agent ops in" in capsys.readouterr().err
    assert main(["status", "agent:main:quiet", "--changes-since", "-1", "--db",
                 str(db_path)]) == 1
    assert capsys.readouterr().err == "ssa: --changes-since must not be negative\n"


def test_list_starts_with_a_header_and_its_json_has_none(
    open_gateway: Callable[..., Gateway], db_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    gw = open_gateway()
    gw.create_session("agent:main:quiet")
    gw.close()
    assert main(["list", "--db", str(db_path)]) == 0
    header, line = capsys.readouterr().out.splitlines()
    assert header.split() == ["SESSION", "TOOL", "PROJECT", "NAME", "STATE", "LAST",
                              "ACTIVITY", "STATE", "VERSION", "UPSTREAM"]
    assert line.split()[:3] == ["agent:main:quiet", "-", "-"]
    assert line.split()[-2:] == ["-", "-"]  # no state version, no upstream
    assert main(["list", "--json", "--db", str(db_path)]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert msgspec.json.decode(line)["sessionKey"] == "agent:main:quiet"


def test_a_signal_log_without_its_tables_is_named_not_its_missing_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    half = tmp_path / "half.sqlite"
    conn = apsw.Connection(str(half))
    conn.pragma("application_id", 0x53534131)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    for command in (["list"], ["status", "agent:main:main"]):
        assert main([*command, "--db", str(half)]) == 1
        assert capsys.readouterr().err == (
            f"ssa: {half} is an incomplete session-state database (its tables are missing); "
            "open it with a gateway to set it up\n")


def test_classify_refuses_a_session_id_for_a_source_without_sessions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(claude_user("hello"))
    for source in ("claude", "codex", "pi"):
        assert main(["classify", "--source", source, str(transcript), "--session", "s"]) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert err == ("ssa: --session is only for --source opencode or --source crush "
                       f"(a {source} transcript holds one session: give its file)\n")
    assert main(["classify", "--source", "claude", str(transcript)]) == 0
    assert capsys.readouterr().out == '{"line":0,"human":true,"reason":"typed"}\n'


def _store(path: Path, sql: str) -> Path:
    conn = apsw.Connection(str(path))
    conn.execute(sql)
    conn.close()
    return path


def test_classify_says_what_is_wrong_with_an_opencode_store_not_which_query_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    other = _store(tmp_path / "other.db", "CREATE TABLE notes (x)")
    old = _store(tmp_path / "old.db", "CREATE TABLE session (id TEXT)")
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    expected = {
        other: "not an OpenCode database (it has no OpenCode session tables)",
        old: "an OpenCode database of a layout this release does not read (OpenCode 1.2 or "
             "newer is read)",
        text: "not a SQLite database (give OpenCode's opencode.db)",
    }
    for path, why in expected.items():
        for session in ([], ["--session", "ses_x"]):
            assert main(["classify", "--source", "opencode", str(path), *session]) == 1
            assert capsys.readouterr().err == f"ssa: cannot read {path}: {why}\n"


def test_watch_reports_an_unreadable_opencode_store_once_in_plain_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    store = _store(tmp_path / "opencode.db", "CREATE TABLE session (id TEXT)")
    assert main(["watch", "--db", str(tmp_path / "state.sqlite"), "--opencode", str(store),
                 "--scans", "3", "--interval", "0.1"]) == 0
    err = capsys.readouterr().err
    assert err == (f"ssa: cannot list OpenCode sessions in {store}: an OpenCode database of a "
                   "layout this release does not read (OpenCode 1.2 or newer is read)\n")


def test_watch_interval_message_matches_the_rule(capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 25 item 7: --interval 1e-9 spun a core; 0.1 s is the floor.
    for interval in ("0", "-1", "86401", "nan", "inf", "1e-9", "0.099"):
        assert main(["watch", "--interval", interval, "--scans", "0"]) == 1
        assert capsys.readouterr().err == (
            "ssa: --interval must be a number of seconds from 0.1 to 86400\n")


# --- issue 25 item 16: the newcomer's command line --------------------------------------


def test_ssa_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    from actors.cli.app import main

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"ssa {version('session-state-awareness')}\n"


def test_an_unknown_option_shows_the_subcommands_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from actors.cli.app import main

    with pytest.raises(SystemExit) as exited:
        main(["watch", "--bogus"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: ssa watch ")
    assert err.endswith("ssa watch: error: unrecognized arguments: --bogus\n")


def test_db_help_names_the_default_path(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    from actors.cli.app import main

    monkeypatch.setenv("SSA_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "1000")  # no wrapping inside the path
    for command in ("watch", "status", "list"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = capsys.readouterr().out
        assert f"else {tmp_path / 'state.sqlite'}," in out


def test_ctrl_c_while_the_library_imports_exits_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    import builtins

    import ssa_cli

    real_import = builtins.__import__

    def interrupted(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "actors.cli.app":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    assert ssa_cli.main() == 130
    assert capsys.readouterr() == ("", "")


def test_a_second_ctrl_c_after_the_stop_is_ignored(tmp_path: Path) -> None:
    """After a stop signal the handlers are not restored to Python's default: a second
    Ctrl-C while the watch closes (or the interpreter exits) used to kill it (-2)."""
    import argparse
    import io
    import os
    import signal

    from actors.cli.watch import run_watch

    claude = tmp_path / "claude" / "-w"
    claude.mkdir(parents=True)
    (claude / "a.jsonl").write_bytes(b'{"type":"user"}\n')

    class Interrupting(io.StringIO):
        def write(self, text: str) -> int:
            if text.startswith("adopted "):
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C once it is watching
            return super().write(text)

    previous = signal.getsignal(signal.SIGINT)
    try:
        args = argparse.Namespace(
            db=tmp_path / "s.sqlite", claude=[str(tmp_path / "claude")], codex=None,
            opencode=None, pi=None, watcher="agent:main:main", interval=60.0, scans=None,
            json=False, poll_only=True)
        assert run_watch(args, out=Interrupting(), err=io.StringIO()) == 0
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C: nothing happens
    finally:
        signal.signal(signal.SIGINT, previous)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)


def test_sighup_stops_watch_cleanly(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    claude = tmp_path / "claude" / "-w"
    claude.mkdir(parents=True)
    (claude / "a.jsonl").write_bytes(b'{"type":"user"}\n')
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "actors", "watch", "--db", str(tmp_path / "s.sqlite"),
         "--claude", str(tmp_path / "claude"), "--interval", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(b"adopted 1 session")
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(timeout=20) == 0
        assert proc.stderr is not None
        assert proc.stderr.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=20)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_status_list_and_watch_say_which_adopted_session_is_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 25 item 11: keys are tool session ids; every form now also names the
    transcript (OpenCode: store and session id) and the project directory."""
    import argparse
    import io

    from actors.cli.watch import run_watch
    from actors.testing import ClaudeCodeTranscript, OpenCodeTranscript, Typed

    claude = tmp_path / "claude" / "-home-user-shop" / "abc.jsonl"
    claude.parent.mkdir(parents=True)
    transcript = ClaudeCodeTranscript(claude, cwd="/home/user/shop")
    transcript.append(Typed("history"))
    store = tmp_path / "oc" / "opencode.db"
    store.parent.mkdir()
    oc = OpenCodeTranscript(store, directory="/home/user/api")
    oc.append(Typed("history"))
    db = tmp_path / "s.sqlite"

    class TypeOnSummary(io.StringIO):
        def write(self, text: str) -> int:
            if text.startswith('{"adopted"'):
                transcript.append(Typed("typed while watched"))
                OpenCodeTranscript.resume(store, oc.session_id).append(Typed("typed too"))
            return super().write(text)

    out = TypeOnSummary()
    args = argparse.Namespace(db=db, claude=[str(tmp_path / "claude")], codex=None,
                              opencode=[str(store)], pi=None, watcher="agent:main:main",
                              interval=0.001, scans=1, json=True)
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    records = [msgspec.json.decode(line) for line in out.getvalue().splitlines()]
    upstream = {r["sessionKey"]: r["upstream"] for r in records if "notice" in r}
    ckey, okey = "agent:main:claude:abc", f"agent:main:opencode:{oc.session_id}"
    assert upstream == {
        ckey: {"source": "claude", "path": str(claude.resolve()), "threadId": "abc",
               "project": "/home/user/shop"},
        okey: {"source": "opencode", "path": str(store.resolve()), "threadId": oc.session_id,
               "project": "/home/user/api"}}
    assert main(["status", ckey, "--db", str(db)]) == 0
    status = msgspec.json.decode(capsys.readouterr().out)
    assert status["upstream"] == upstream[ckey]
    # The two links' events interleave in either order (state version 3 or 4): the
    # version is whatever the session's own last event is, from ssa status.
    version = status["stateVersion"]
    assert version in (3, 4), status
    assert main(["list", "--db", str(db)]) == 0
    rows = {r["SESSION"]: r for r in table_rows(capsys.readouterr().out)}
    assert (rows[ckey]["STATE VERSION"], rows[ckey]["UPSTREAM"]) == (
        str(version), str(claude.resolve()))
    assert (rows[ckey]["TOOL"], rows[ckey]["PROJECT"]) == ("Claude Code", "/home/user/shop")
    assert rows[okey]["UPSTREAM"] == f"{store.resolve()}#{oc.session_id}"
    assert (rows[okey]["TOOL"], rows[okey]["PROJECT"]) == ("OpenCode", "/home/user/api")
    assert main(["list", "--json", "--db", str(db)]) == 0
    listed = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["sessionKey"]: r["upstream"]["path"] for r in listed if "upstream" in r} == {
        ckey: str(claude.resolve()), okey: str(store.resolve())}
    args.json = False
    text = io.StringIO()
    transcript.append(Typed("and again"))
    assert run_watch(args, out=text, err=io.StringIO()) == 0
    assert f"  in claude transcript {claude.resolve()}, project /home/user/shop" in (
        text.getvalue().splitlines())


# --- issue 25 item 8: a PostgreSQL password off the command line --------------------------


def test_a_password_in_the_db_url_is_warned_about_and_never_echoed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``/proc/PID/cmdline`` shows ``--db postgresql://user:PASSWORD@...`` to every local
    user for as long as ``ssa`` runs: say so, and name the ways that keep it out."""
    for url in ("postgresql://u:s3cret-pw@127.0.0.1:1/db?connect_timeout=1",
                "postgresql://u@127.0.0.1:1/db?password=s3cret-pw&connect_timeout=1"):
        assert main(["status", "agent:main:x", "--db", url]) == 1
        err = capsys.readouterr().err
        assert err.startswith("ssa: warning: the --db URL holds a password")
        assert "PGPASSWORD" in err
        assert "~/.pgpass" in err
        assert "SSA_DB" in err
        assert "s3cret-pw" not in err
    assert main(["status", "agent:main:x", "--db",
                 "postgresql://u@127.0.0.1:1/db?connect_timeout=1"]) == 1
    assert "warning" not in capsys.readouterr().err


def test_ssa_db_names_the_database_when_db_is_not_given(
    open_gateway: Callable[..., Gateway], db: Any, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A URL (or file) read from ``$SSA_DB`` never appears in the process list."""
    gw = open_gateway()
    gw.create_session("agent:main:from-env")
    gw.close()
    monkeypatch.setenv("SSA_DB", str(db.location))
    assert main(["list"]) == 0
    out, err = capsys.readouterr()
    assert [r["SESSION"] for r in table_rows(out)] == ["agent:main:from-env"]
    assert err == ""
    monkeypatch.setenv("SSA_DB", "mysql://u@h/db")
    assert main(["list"]) == 2
    assert capsys.readouterr().err.startswith("ssa: $SSA_DB: --db: the database must be")


def test_the_db_help_says_how_to_keep_a_password_off_the_command_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")
    with pytest.raises(SystemExit):
        main(["watch", "--help"])
    out = capsys.readouterr().out
    for way in ("$SSA_DB", "PGPASSWORD", "~/.pgpass", "?service=NAME"):
        assert way in out


def test_list_says_why_a_program_prompted_session_never_counts(
    open_gateway: Callable[..., Gateway], db_path: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 34 item 11: ``claude -p`` and ``codex exec`` workers never count, by design;
    ``ssa list`` says so (a person testing with ``claude -p`` must not think it broken)."""
    from actors.testing import ClaudeCodeTranscript, CodexRollout, Reply, Typed

    printed = ClaudeCodeTranscript(tmp_path / "p.jsonl", entrypoint="sdk-cli")
    printed.append(Typed("do it"), Reply("done"))
    typed = ClaudeCodeTranscript(tmp_path / "t.jsonl")
    typed.append(Typed("hello"), Reply("hi"))
    exec_run = CodexRollout(tmp_path / "rollout-exec.jsonl", source="exec")
    exec_run.append(Typed("do it"), Reply("done"))
    gw = open_gateway()
    assert gw.adopt("agent:main:claude:printed", source="claude", path=printed.path) is not None
    assert gw.adopt("agent:main:claude:typed", source="claude", path=typed.path) is not None
    assert gw.adopt("agent:main:codex:exec", source="codex", path=exec_run.path) is None
    gw.close()
    assert main(["list", "--db", str(db_path)]) == 0
    cells = {r["SESSION"]: r["UPSTREAM"] for r in table_rows(capsys.readouterr().out)}
    assert cells["agent:main:claude:printed"].endswith(
        "(turns never count: a program prompts it (print mode or an SDK))")
    assert cells["agent:main:claude:typed"] == str(typed.path.resolve())
    assert cells["agent:main:codex:exec"] == "not monitored: a program prompts it (exec mode)"
    assert main(["list", "--json", "--db", str(db_path)]) == 0
    rows = {r["sessionKey"]: r for r in map(msgspec.json.decode,
                                            capsys.readouterr().out.splitlines())}
    assert rows["agent:main:claude:printed"]["turnsNeverCount"] == "program_driven"
    assert rows["agent:main:codex:exec"]["notMonitored"] == "exec_thread"
    assert "turnsNeverCount" not in rows["agent:main:claude:typed"]
def test_no_database_says_what_named_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """"no database at X (pass --db PATH)" was said even when --db X had been passed."""
    missing = tmp_path / "missing.sqlite"
    monkeypatch.delenv("SSA_DB", raising=False)
    monkeypatch.setenv("SSA_STATE_DIR", str(tmp_path / "state"))
    assert main(["status", "agent:main:x", "--db", str(missing)]) == 1
    assert capsys.readouterr().err == (f"ssa: no database at {missing} (given by --db: check "
                                       "the path)\n")
    monkeypatch.setenv("SSA_DB", str(missing))
    assert main(["list"]) == 1
    assert capsys.readouterr().err == (f"ssa: no database at {missing} (given by $SSA_DB: "
                                       "check the path)\n")
    monkeypatch.delenv("SSA_DB")
    assert main(["list"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"ssa: no database at {tmp_path / 'state' / 'state.sqlite'}, the "
                          "default location (pass --db PATH or set $SSA_DB")
    # Adversary round 3 (finding 08): it says what makes one, workers' hooks alone do not.
    assert "ssa manage, run inside that session" in err


@pytest.mark.parametrize("command", ["status", "list", "watch", "watches", "manage"])
def test_db_help_names_the_default_path_whatever_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """A '%' in the default path broke --help (argparse %-formats it); no '{default}' shows."""
    state = tmp_path / "50%done {default}"
    monkeypatch.setenv("SSA_STATE_DIR", str(state))
    with pytest.raises(SystemExit) as stopped:
        main([command, "--help"])
    assert stopped.value.code == 0
    out = "".join(capsys.readouterr().out.split())  # argparse wraps (at spaces, hyphens)
    assert "".join(f"else {state / 'state.sqlite'},".split()) in out
    assert out.count("{default}") == 1  # only the one inside the path itself
