"""``ssa install`` / ``ssa uninstall`` against a second adversary's findings: uninstall without
its record, links that lead nowhere, files the person locked, layout kept byte for byte,
hand-edited hook commands, JSONC settings of Gemini CLI and Qwen Code.

Same set-up as ``tests/test_agents_install.py``: a throw-away HOME, a fake ``ssa``
passed as ``--ssa``, ``actors.cli.app.main`` called in process.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from actors.agents import _jsonc
from tests.test_agents_install import home, run, snapshot, ssa

__all__ = ["home", "ssa"]  # the fixtures, imported for pytest


def _refused(code: int, out: str, err: str, path: Path) -> None:
    """One line naming ``path``, exit 2, nothing on stdout."""
    assert code == 2, err
    assert out == ""
    assert err.startswith("ssa: ")
    assert err.count("\n") == 1
    assert str(path) in err


# --- item 1: no record entry: nothing that was there is removed ---------------------------

@pytest.mark.parametrize("how", ["another state folder", "a damaged record"])
def test_uninstall_without_its_record_removes_no_file_that_was_there(
        home: Path, ssa: str, how: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": {}}\n')
    state = home / ".claude.json"
    state.write_text('{"mcpServers": {}}\n')
    assert run(capsys, "install", "claude-code", "--ssa", ssa)[0] == 0
    if how == "another state folder":
        monkeypatch.setenv("SSA_STATE_DIR", str(home / "other"))
    else:
        (home / ".local" / "state" / "ssa" / "installed.json").write_text("{not json")
    code, _out, err = run(capsys, "uninstall", "claude-code")
    assert code == 0, err
    assert settings.exists()
    assert state.exists()
    hooks = json.loads(settings.read_text())["hooks"]
    assert all(groups == [] for groups in hooks.values())  # emptied, kept: harmless
    assert json.loads(state.read_text()) == {"mcpServers": {}}


# --- item 2 and 4: links that lead nowhere, or in a circle ---------------------------------

def test_a_dangling_link_is_refused_and_its_target_not_created(
        home: Path, ssa: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    target = tmp_path / "nowhere" / "dir" / "x.json"
    settings.symlink_to(target)
    before = snapshot(home)
    _refused(*run(capsys, "install", "claude-code", "--ssa", ssa), settings)
    assert not (tmp_path / "nowhere").exists()
    assert snapshot(home) == before
    assert settings.is_symlink()


def test_a_loop_of_links_is_refused_in_one_line(home: Path, ssa: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    other = home / ".claude" / "other.json"
    settings.symlink_to(other)
    other.symlink_to(settings)
    before = snapshot(home)
    code, out, err = run(capsys, "install", "claude-code", "--ssa", ssa)
    _refused(code, out, err, settings)
    assert "loop" in err
    assert snapshot(home) == before


# --- item 4 and 7: a file the person locked ------------------------------------------------

def test_an_immutable_settings_file_is_refused_and_no_backup_is_left(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "x"}\n')
    if not _chattr("+i", settings):
        pytest.skip("chattr +i needs root and a file system that has the flag")
    try:
        before = snapshot(home)
        code, out, err = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")
        _refused(code, out, err, settings)
        assert "immutable" in err
        assert snapshot(home) == before  # no .ssa-backup, no record
    finally:
        _chattr("-i", settings)


def _chattr(flag: str, path: Path) -> bool:
    """Run ``chattr flag path``; whether it worked (root and a file system with flags)."""
    try:
        return subprocess.run(["chattr", flag, str(path)], capture_output=True, timeout=10,
                              check=False).returncode == 0
    except FileNotFoundError:
        return False


def test_an_immutable_settings_folder_is_refused_in_one_line(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    folder = home / ".claude"
    folder.mkdir()
    (folder / "settings.json").write_text('{"model": "x"}\n')
    if not _chattr("+i", folder):
        pytest.skip("chattr +i needs root and a file system that has the flag")
    try:
        before = snapshot(home)
        code, out, err = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")
        _refused(code, out, err, folder)
        assert "immutable" in err
        assert snapshot(home) == before
    finally:
        _chattr("-i", folder)


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_read_only_settings_file_is_refused(home: Path, ssa: str, command: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    if command == "uninstall":
        assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    else:
        settings.write_text('{"model": "x"}\n')
    settings.chmod(0o444)
    before = snapshot(home)
    code, out, err = run(capsys, command, "claude-code",
                         *(["--ssa", ssa, "--no-mcp"] if command == "install" else []))
    _refused(code, out, err, settings)
    assert "read-only" in err
    assert snapshot(home) == before
    assert settings.stat().st_mode & 0o777 == 0o444


# --- item 5: byte for byte -----------------------------------------------------------------

@pytest.mark.parametrize("original", [
    '{\n  "hooks": {\n    "Stop": [ ]\n  }\n}\n',
    '{\n  "hooks": {\n    "Stop": [\n\n    ]\n  }\n}\n',
    '{\n  "hooks": {\n    "UserPromptSubmit": [ ],\n    "Stop": []\n  }\n}\n',
    '{ }\n',
    '{\n  "model": "x",\n  "hooks": {  }\n}\n',
])
def test_an_empty_container_that_was_there_comes_back_byte_for_byte(
        home: Path, ssa: str, original: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(original)
    state = home / ".claude.json"
    state.write_text('{"mcpServers": {\n}}\n')
    assert run(capsys, "install", "claude-code", "--ssa", ssa)[0] == 0
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--scope", "all")[0] == 0
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert settings.read_bytes() == original.encode()
    assert state.read_bytes() == b'{"mcpServers": {\n}}\n'


def test_a_reinstall_that_empties_a_container_that_was_there_gives_its_bytes_back(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": {"Stop": [ ]}}\n')
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp", "--no-wake")[0] == 0
    # The waiting hook went; the turn's end is still told (issue 33: --activity).
    assert "--wait" not in settings.read_text()
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert '"Stop": [ ]' in settings.read_text()  # ours went, the layout came back


def test_crlf_files_get_crlf_lines_and_come_back_byte_for_byte(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = b'{\r\n  "model": "x",\r\n  "hooks": {\r\n    "Stop": []\r\n  }\r\n}\r\n'
    settings.write_bytes(original)
    state = home / ".claude.json"
    state_original = b'{\r\n  "theme": "dark"\r\n}\r\n'
    state.write_bytes(state_original)
    assert run(capsys, "install", "claude-code", "--ssa", ssa)[0] == 0
    for path in (settings, state):
        data = path.read_bytes()
        assert data.count(b"\n") == data.count(b"\r\n") > 4  # no bare LF: one line ending
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert settings.read_bytes() == original
    assert state.read_bytes() == state_original


def test_a_crlf_codex_config_gets_crlf_lines_and_comes_back_byte_for_byte(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    original = b'# mine\r\nmodel = "o3"\r\n\r\n[profiles.fast]\r\nmodel = "o4-mini"\r\n'
    config.write_bytes(original)
    assert run(capsys, "install", "codex", "--ssa", ssa)[0] == 0
    data = config.read_bytes()
    assert b"[mcp_servers.ssa]" in data
    assert data.count(b"\n") == data.count(b"\r\n")
    assert run(capsys, "uninstall", "codex")[0] == 0
    assert config.read_bytes() == original


def test_a_dangling_link_in_place_of_a_folder_is_refused(
        home: Path, ssa: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = home / ".claude"
    folder.symlink_to(tmp_path / "nowhere" / "claude")
    code, out, err = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")
    _refused(code, out, err, folder)
    assert not (tmp_path / "nowhere").exists()


def test_a_container_filled_since_keeps_its_new_layout(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": {"Stop": [ ]}}\n')
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    value = json.loads(settings.read_text())
    value["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "echo mine"}]})
    settings.write_text(json.dumps(value, indent=2) + "\n")
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert json.loads(settings.read_text()) == {"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "echo mine"}]}]}}


# --- item 6: a hook command with the person's VAR=value in front ---------------------------

def test_an_env_prefixed_hook_command_is_ours(home: Path, ssa: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    text = settings.read_text()
    prefixed = text.replace(f'"{ssa} hook claude-code"', f'"SSA_DB=/x {ssa} hook claude-code"')
    assert prefixed != text
    settings.write_text(prefixed)
    code, _out, err = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp",
                          "--scope", "all")
    assert code == 0, err
    handlers = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"]
    assert handlers == [{"hooks": [{"type": "command", "timeout": 10,
                                    "command": f"SSA_DB=/x {ssa} hook claude-code "
                                               "--scope all"}]}]
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert not settings.exists() or "hook claude-code" not in settings.read_text()


# --- item 8: Gemini CLI and Qwen Code read JSONC -----------------------------------------

@pytest.mark.parametrize(("tool", "folder"), [("gemini", ".gemini"), ("qwen", ".qwen")])
def test_gemini_and_qwen_settings_with_comments_are_edited(
        home: Path, ssa: str, tool: str, folder: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_CLI_HOME", "QWEN_HOME"):
        monkeypatch.delenv(name, raising=False)
    settings = home / folder / "settings.json"
    settings.parent.mkdir()
    original = '{\n  // my theme\n  "theme": "Dracula" /* dark */\n}\n'
    settings.write_text(original)
    code, _out, err = run(capsys, "install", tool, "--ssa", ssa)
    assert code == 0, err
    text = settings.read_text()
    assert "// my theme" in text
    value = _jsonc.parse(text, strict=False).value
    assert value["mcpServers"]["ssa"]["command"] == ssa
    assert value["hooks"]
    assert run(capsys, "uninstall", tool)[0] == 0
    assert settings.read_text() == original


# --- item 9: Codex's trust dialog, as the docs say ----------------------------------------

def test_codex_install_names_the_trust_dialog(home: Path, ssa: str,
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    code, out, _err = run(capsys, "install", "codex", "--ssa", ssa)
    assert code == 0
    assert "Hooks need review" in out
    assert "Trust all and continue" in out
    assert "run /hooks," not in out
    assert os.path.exists(home / ".codex" / "hooks.json")
