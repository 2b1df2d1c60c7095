"""One rule for a SQLite location, at every entry point (persistence.locations).

The default location's directories are created whole; a path given gets its
file, and its own folder only when that folder's parent exists. ``:memory:``,
an empty path, a directory and a device are refused before anything is
created (``ssa hook --db X`` used to make ``hooks/`` beside any X, e.g.
``/hooks`` and ``/dev/hooks`` as root, before it looked at X).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from actors import AsyncGateway, Gateway
from actors.agents.mcp_server import GatewayHolder
from actors.cli.app import main
from actors.errors import InvalidArgument
from persistence.locations import (
    default_state_file,
    default_state_path,
    folders_to_create,
    sqlite_location_problem,
)

SUBPROCESS_TIMEOUT_S = 30.0
GOOD = b'{"session_id": "s1", "cwd": "/nonexistent", "hook_event_name": "UserPromptSubmit"}'


def _tree(root: Path) -> list[str]:
    """Every path under ``root``, relative, sorted."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_the_rule_as_a_pure_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSA_STATE_DIR", str(tmp_path / "state" / "deep"))
    assert sqlite_location_problem(tmp_path / "x.sqlite") is None
    assert sqlite_location_problem(tmp_path / "one" / "x.sqlite") is None
    assert folders_to_create(tmp_path / "one" / "x.sqlite") == [str(tmp_path / "one")]
    problem = sqlite_location_problem(tmp_path / "one" / "two" / "x.sqlite")
    assert problem is not None
    assert "neither" in problem
    # The default location (here $SSA_STATE_DIR's) is ours: its whole tree is made.
    assert sqlite_location_problem(tmp_path / "state" / "deep" / "state.sqlite") is None
    assert folders_to_create(tmp_path / "state" / "deep" / "state.sqlite") == [
        str(tmp_path / "state"), str(tmp_path / "state" / "deep")]
    for bad, says in (("", "no file path"), (":memory:", "no file path"),
                      ("file:x.db?mode=memory", "no file path"), (str(tmp_path), "directory"),
                      ("/dev/null", "not a regular file"), ("a\0b", "NUL"),
                      # adversary round 3: a new file there made /dev/hooks as root
                      ("/dev/x.sqlite", "/dev"), ("/dev/shm/x.sqlite", "/dev"),
                      ("/proc/x.sqlite", "/proc"), ("/sys/kernel/x.sqlite", "/sys")):
        problem = sqlite_location_problem(bad)
        assert problem is not None, bad
        assert says in problem, (bad, problem)
    (tmp_path / "plain").write_text("x")
    problem = sqlite_location_problem(tmp_path / "plain" / "x.sqlite")
    assert problem is not None
    assert "is not a directory" in problem
    assert _tree(tmp_path) == ["plain"]  # the rule itself creates nothing


def test_gateway_open_makes_one_folder_and_refuses_a_missing_tree(tmp_path: Path) -> None:
    """Gateway.open used to make any missing tree (``mkdir -p``) while the CLI refused one."""
    with Gateway.open(tmp_path / "one" / "state.sqlite", monitor=False) as gw:
        assert gw.location == str(tmp_path / "one" / "state.sqlite")
    assert (tmp_path / "one").stat().st_mode & 0o777 == 0o700
    with pytest.raises(InvalidArgument, match="neither"):
        Gateway.open(tmp_path / "a" / "b" / "state.sqlite", monitor=False)
    with pytest.raises(InvalidArgument, match="not a regular file"):
        Gateway.open("/dev/null", monitor=False)

    async def async_open() -> None:
        with pytest.raises(InvalidArgument, match="neither"):
            await AsyncGateway.open(tmp_path / "c" / "d" / "state.sqlite", monitor=False)
    asyncio.run(asyncio.wait_for(async_open(), 30))
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "c").exists()


def test_the_mcp_server_applies_the_same_rule(tmp_path: Path) -> None:
    """``ssa mcp --db`` opens through Gateway.open: same rule, reported as a refusal."""
    holder = GatewayHolder(str(tmp_path / "a" / "b" / "state.sqlite"))
    try:
        with pytest.raises(InvalidArgument, match="neither"):
            holder.get()
    finally:
        holder.close()
    assert _tree(tmp_path) == []


@pytest.mark.parametrize("command", [["watch", "--scans", "0"], ["demo"]])
def test_the_command_line_makes_one_folder_and_refuses_a_missing_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str],
) -> None:
    missing = tmp_path / "no" / "such" / "x.sqlite"
    assert main([*command, "--db", str(missing)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"ssa: --db {missing}: neither {missing.parent} nor its parent")
    assert err.count("\n") == 1
    assert _tree(tmp_path) == []


def test_an_empty_db_is_refused_by_the_cli_and_by_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ssa install --db ""`` used to write the current directory into the hooks."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for command in (["list"], ["status", "agent:main:x"], ["watch", "--scans", "0"]):
        with pytest.raises(SystemExit) as stopped:
            main([*command, "--db", ""])
        assert stopped.value.code == 2
        assert "--db must not be empty" in capsys.readouterr().err
    assert main(["install", "claude-code", "--db", "", "--dry-run"]) == 2
    assert capsys.readouterr().err == ("ssa: --db must not be empty: give a database file or "
                                       "a postgresql:// URL\n")
    assert main(["install", "claude-code", "--db", str(tmp_path / "a" / "b" / "x.sqlite"),
                 "--dry-run"]) == 2
    assert "neither" in capsys.readouterr().err
    assert _tree(tmp_path) == []


def _hook(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SSA_", "CLAUDE_"))}
    base.update({"HOME": str(cwd), "XDG_STATE_HOME": str(cwd / "state")})
    return subprocess.run([sys.executable, "-m", "actors", "hook", "claude-code", *args],
                          input=GOOD, capture_output=True, cwd=cwd, env=base,
                          timeout=SUBPROCESS_TIMEOUT_S, check=False)


def test_the_hook_checks_its_db_before_it_creates_anything(tmp_path: Path) -> None:
    """``--db :memory:`` left ``hooks/`` in the project; a directory or a device, beside it."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "dir").mkdir()
    fifo = project / "fifo"
    os.mkfifo(fifo)
    for db, says in ((":memory:", "no file path"), ("", "must not be empty"),
                     (str(project / "dir"), "is a directory"),
                     (str(fifo), "not a regular file"),
                     (str(project / "a" / "b" / "x.sqlite"), "neither"),
                     # adversary, round 34: these made hooks/ (or sqlite:/hooks) in the project
                     ("state.sqlite", "relative path"),
                     ("sqlite:///state.db", "looks like a sqlite: URL")):
        done = _hook(project, "--db", db)
        assert done.returncode == 0
        assert done.stdout == b""
        lines = done.stderr.decode().splitlines()
        assert len(lines) == 1, (db, lines)
        assert says in lines[0], (db, lines)
        # Nothing beside the bad path; the failure is kept in our own state folder.
        assert [p for p in _tree(project) if not p.startswith("state")] == ["dir", "fifo"], db
        assert (project / "state" / "ssa" / "hooks" / "last-errors.json").is_file()
    # ~ is expanded as the shell would (a plugin runs the hook without one): no ./~/ folder.
    done = _hook(project, "--db", "~/tilde.sqlite")
    assert done.returncode == 0, done.stderr
    assert not (project / "~").exists()
    # A good one: its own folder is made, as the gateway makes it (the rule, once more).
    done = _hook(project, "--db", str(project / "run" / "x.sqlite"))
    assert done.returncode == 0, done.stderr
    assert (project / "run").is_dir()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_root_is_refused_a_database_in_another_users_folder(tmp_path: Path) -> None:
    """Adversary finding (round 34): root with another user's HOME (sudo that keeps HOME)
    made root-owned state files there, which that user's own hooks then could not open."""
    theirs = tmp_path / "home"
    (theirs / ".local" / "state").mkdir(parents=True)
    for folder in (theirs, theirs / ".local", theirs / ".local" / "state"):
        os.chown(folder, 65534, 65534)
    db = theirs / ".local" / "state" / "ssa" / "state.sqlite"
    problem = sqlite_location_problem(db)
    assert problem is not None
    assert "user 65534" in problem
    assert "runs as root" in problem
    assert not (theirs / ".local" / "state" / "ssa").exists()
    with pytest.raises(InvalidArgument, match="runs as root"):
        Gateway.open(db)
    assert not (theirs / ".local" / "state" / "ssa").exists()
    assert sqlite_location_problem(tmp_path / "mine.sqlite") is None  # root's own folder


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_a_refused_root_hook_leaves_nothing_in_the_users_folder(tmp_path: Path) -> None:
    """Adversary round 3 (finding 12): the hook refused root in another user's folder but
    first kept its failure line there, in a root-owned hooks/last-errors.json, after which
    that user's own ssa manage could no longer find its session."""
    theirs = tmp_path / "home"
    (theirs / "state").mkdir(parents=True)
    for folder in (theirs, theirs / "state"):
        os.chown(folder, 65534, 65534)
    done = _hook(theirs)
    assert done.returncode == 0
    assert b"runs as root" in done.stderr  # refused, in one line
    assert [p for p in theirs.rglob("*") if p.stat().st_uid != 65534] == []


def test_a_tilde_in_the_state_variables_is_the_home_and_a_relative_xdg_is_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Adversary round (stop 39): a settings ``env`` block or a ``.env`` file does not expand
    ``~``, and ``ssa`` did not either (a ``./~/`` folder in each project)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSA_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", "~/xdg")
    assert default_state_file() == str(tmp_path / "xdg" / "ssa" / "state.sqlite")
    monkeypatch.setenv("XDG_STATE_HOME", "relative/xdg")  # the XDG spec: ignored
    assert default_state_file() == str(tmp_path / ".local" / "state" / "ssa" / "state.sqlite")
    monkeypatch.setenv("SSA_STATE_DIR", "~/ssa-state")
    assert default_state_file() == str(tmp_path / "ssa-state" / "state.sqlite")
    assert default_state_path() == tmp_path / "ssa-state" / "state.sqlite"
    assert sqlite_location_problem(default_state_file()) is None


def test_a_relative_state_dir_is_refused_everywhere_and_leaves_nothing_in_the_project(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Adversary round (stop 39): the hooks refused it but wrote ``rel/state/hooks/`` in every
    project they ran in, and ``ssa manage`` made a database there and said it worked."""
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("SSA_STATE_DIR", "rel/state")
    problem = sqlite_location_problem(default_state_file())
    assert problem is not None
    assert "relative path, from $SSA_STATE_DIR='rel/state'" in problem
    assert main(["manage", "--session", "agent:main:claude:m"]) == 1
    assert "relative path" in capsys.readouterr().err
    with pytest.raises(InvalidArgument, match="relative path"):
        Gateway.open()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SSA_", "CLAUDE_"))}
    done = subprocess.run([sys.executable, "-m", "actors", "hook", "claude-code"],
                          input=GOOD, capture_output=True, cwd=project, check=False,
                          env={**base, "HOME": str(tmp_path), "SSA_STATE_DIR": "rel/state"},
                          timeout=SUBPROCESS_TIMEOUT_S)
    assert done.returncode == 0
    assert b"relative path" in done.stderr
    assert _tree(project) == []  # no database, no hooks/ folder, no last-errors.json


def test_a_path_that_is_not_utf8_is_one_line_before_anything_is_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Adversary round (stop 39): a home named with Latin-1 bytes gave tracebacks from
    ``ssa manage`` and ``ssa list`` and left an empty ``state.sqlite``."""
    home = tmp_path / os.fsdecode(b"bad\xff\xfeh")
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("SSA_STATE_DIR", "XDG_STATE_HOME", "SSA_DB"):
        monkeypatch.delenv(name, raising=False)
    problem = sqlite_location_problem(default_state_file())
    assert problem is not None
    assert "not UTF-8" in problem
    assert problem.isprintable()
    for command in (["manage", "--session", "agent:main:claude:m"], ["list"]):
        assert main(command) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert "not UTF-8" in err
    assert _tree(home) == []
