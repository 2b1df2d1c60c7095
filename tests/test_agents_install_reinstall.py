"""``ssa install`` run again over an install the person edited, and what it tells them.

Same set-up as ``tests/test_agents_install.py``: a throw-away HOME, a fake ``ssa``
passed as ``--ssa``, ``actors.cli.app.main`` called in process.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from actors.agents.installmerge import carry_argv, handler_edits, merge_entry
from tests.test_agents_install import home, run, ssa

__all__ = ["home", "ssa"]  # the fixtures, imported for pytest


def _commands(path: Path) -> dict[str, list[str]]:
    """Each event's handler command lines in a hooks file."""
    value = json.loads(path.read_text())
    return {event: [h["command"] for g in groups for h in g["hooks"]]
            for event, groups in value["hooks"].items()}


# --- J: the hooks a re-install adds take the person's edits of ours --------------------

def test_hooks_a_reinstall_adds_take_the_prefix_and_scope_of_the_edited_one(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    """One edited prompt hook (an older install's): the SessionStart, waiting Stop and
    activity hooks the re-install adds used the default database and scope."""
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    edited = f"SSA_DB=/data/other.sqlite {ssa} hook claude-code --scope all"
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": edited}]}]}}))
    code, out, _ = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")
    assert code == 0
    commands = _commands(settings)
    assert set(commands) == {"UserPromptSubmit", "SessionStart", "Stop", "StopFailure",
                             "Notification", "SessionEnd"}
    for event, lines in commands.items():
        assert len(lines) == 1, event
        argv = shlex.split(lines[0])
        assert argv[:4] == ["SSA_DB=/data/other.sqlite", ssa, "hook", "claude-code"], event
        assert argv[4:6] == ["--scope", "all"], event
    assert shlex.split(commands["Stop"][0])[6:] == ["--wait", "--activity"]
    assert shlex.split(commands["StopFailure"][0])[6:] == ["--activity"]
    note = next(line for line in out.splitlines() if line.startswith("kept your edits"))
    assert "SSA_DB=…" in note
    assert "--scope all" in note
    assert "added (SessionStart, Stop, StopFailure, Notification, SessionEnd)" in note
    assert "/data/other.sqlite" not in out  # a prefix's value may be a password
    before = settings.read_bytes()
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    assert settings.read_bytes() == before  # again: nothing changes


def test_an_option_given_to_the_reinstall_wins_over_the_carried_edit(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    edited = f"SSA_DB=/x {ssa} hook claude-code --scope all --db /data/a.sqlite"
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": edited}]}]}}))
    code, _out, _ = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp",
                        "--scope", "list", "--no-db-check")
    assert code == 0
    for event, lines in _commands(settings).items():
        argv = shlex.split(lines[0])
        assert argv[0] == "SSA_DB=/x", event
        assert argv.count("--scope") == 1, event
        assert argv[argv.index("--scope") + 1] == "list", event
        assert argv[argv.index("--db") + 1] == "/data/a.sqlite", event


def test_codex_hooks_a_reinstall_adds_take_the_db_and_the_permission_wait(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The permission wait goes only to the activity hooks the re-install adds."""
    hooks = home / ".codex" / "hooks.json"
    hooks.parent.mkdir()
    prompt = f"{ssa} hook codex --db /data/c.sqlite"
    stop = f"{ssa} hook codex --activity --permission-wait 5"
    hooks.write_text(json.dumps({"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": prompt}]}],
        "Stop": [{"hooks": [{"type": "command", "command": stop}]}]}}))
    code, out, _ = run(capsys, "install", "codex", "--ssa", ssa, "--no-mcp")
    assert code == 0
    commands = _commands(hooks)
    assert set(commands) == {"UserPromptSubmit", "SessionStart", "PostToolUse", "Stop",
                             "PermissionRequest"}
    assert commands["Stop"] == [stop]  # ours already: updated in place, as it was
    for event in ("UserPromptSubmit", "SessionStart", "PostToolUse", "PermissionRequest"):
        argv = shlex.split(commands[event][0])
        assert argv[argv.index("--db") + 1] == "/data/c.sqlite", event
        assert ("--permission-wait" in argv) == ("--activity" in argv), event
    assert shlex.split(commands["PermissionRequest"][0])[3:] == [
        "--db", "/data/c.sqlite", "--permission-wait", "5", "--activity"]
    assert "added (SessionStart, PostToolUse, PermissionRequest)" in out


@pytest.mark.parametrize(("argvs", "wanted", "explicit", "carried", "notes"), [
    ([["A=1", "s", "hook", "t", "--scope", "all"], ["s", "hook", "t", "--db", "d"]],
     ["n", "hook", "t", "--wait"], frozenset(),
     ["A=1", "n", "hook", "t", "--scope", "all", "--db", "d", "--wait"],
     ["A=…", "--scope all", "--db d"]),
    ([["s", "hook", "t", "--scope=all", "--agent", "x"]], ["n", "hook", "t", "--scope", "list"],
     frozenset({"--scope"}), ["n", "hook", "t", "--scope", "list"], []),
    ([["s", "hook", "t", "--activity", "--permission-wait", "5"]], ["n", "hook", "t"],
     frozenset(), ["n", "hook", "t"], []),
    ([["s", "hook", "t", "--wait", "--no-wake"]], ["n", "hook", "t", "--activity"],
     frozenset(), ["n", "hook", "t", "--activity"], []),
])
def test_carry_argv(argvs: list[list[str]], wanted: list[str], explicit: frozenset[str],
                    carried: list[str], notes: list[str]) -> None:
    assert carry_argv(handler_edits(argvs, 3), wanted, 3, explicit) == (carried, notes)


# --- K: the person's edits of the MCP entry are reported, as hook edits are --------------

def test_a_reinstall_reports_the_env_the_person_added_to_the_claude_mcp_entry(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    state = home / ".claude.json"
    assert run(capsys, "install", "claude-code", "--ssa", ssa)[0] == 0
    value = json.loads(state.read_text())
    value["mcpServers"]["ssa"]["env"] = {"SSA_DB": "/data/s.sqlite", "PGPASSWORD": "s3cret"}
    state.write_text(json.dumps(value))
    code, out, _ = run(capsys, "install", "claude-code", "--ssa", ssa)
    assert code == 0
    assert f"already installed: MCP server mcpServers.ssa in {state}" in out
    assert (f"kept your edits of the ssa entries in {state}: env (SSA_DB, PGPASSWORD)"
            in out)
    assert "s3cret" not in out  # the names of the variables, never their values
    assert "/data/s.sqlite" not in out


def test_a_reinstall_reports_the_persons_keys_in_the_codex_table(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    config = home / ".codex" / "config.toml"
    assert run(capsys, "install", "codex", "--ssa", ssa)[0] == 0
    config.write_text(config.read_text() + 'startup_timeout_sec = 30\ncwd = "/s3cret"\n'
                      'env = { PGPASSFILE = "/x" }\n')
    code, out, _ = run(capsys, "install", "codex", "--ssa", ssa)
    assert code == 0
    assert f"already installed: MCP server [mcp_servers.ssa] in {config}" in out
    assert (f"kept your edits of the ssa entries in {config}: startup_timeout_sec 30, cwd, "
            "env (PGPASSFILE)") in out
    assert "s3cret" not in out


@pytest.mark.parametrize(("existing", "kept"), [
    ({"command": "s", "args": ["mcp"], "env": {}}, []),
    ({"command": "s", "args": ["mcp"], "env": {"A": "1"}, "timeout": 5, "token": "t"},
     ["env (A)", "timeout 5", "token"]),
    ({"command": "s", "args": ["mcp"], "env": [], "on": True}, ["env []", "on true"]),
])
def test_merge_entry_names_what_the_person_added(existing: dict[str, object],
                                                 kept: list[str]) -> None:
    wanted = {"command": "s", "args": ["mcp"], "env": {}}
    assert merge_entry(existing, wanted, {"args": 1}, frozenset()) == ({}, kept)


# --- L: the backup the message names is the one written ---------------------------------

def test_the_backup_named_for_a_symlinked_settings_file_is_the_one_written(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    dotfiles = home / "dots" / "settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"a": 1}\n')
    link = home / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(Path("..") / "dots" / "settings.json")
    code, out, _ = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")
    assert code == 0
    backup = dotfiles.with_name("settings.json.ssa-backup")
    assert backup.read_text() == '{"a": 1}\n'  # beside the link's target
    assert f"updated {link} (" in out  # the file as the person knows it
    assert f"; backup {backup})" in out
    assert not link.with_name("settings.json.ssa-backup").exists()


# --- M: Codex's "trust the new hooks" only when hooks.json changes ----------------------

def test_codex_asks_to_trust_the_hooks_only_when_hooks_json_changes(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    trust = "Codex asks you to trust new hooks"
    code, out, _ = run(capsys, "install", "codex", "--ssa", ssa)
    assert code == 0
    assert trust in out
    code, out, _ = run(capsys, "install", "codex", "--ssa", ssa)
    assert code == 0
    assert "already installed: UserPromptSubmit and SessionStart hooks" in out
    assert f"hooks that say where the session stands in {home / '.codex' / 'hooks.json'}" in out
    assert trust not in out
    code, out, _ = run(capsys, "install", "codex", "--ssa", ssa, "--scope", "all",
                       "--dry-run")
    assert code == 0
    assert trust in out  # what the change would ask
    code, out, _ = run(capsys, "install", "codex", "--ssa", ssa, "--scope", "all")
    assert code == 0
    assert trust in out  # another command line: Codex asks again
