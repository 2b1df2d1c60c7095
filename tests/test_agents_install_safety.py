"""``ssa install`` / ``ssa uninstall`` against what an adversary tried: secrets in the URL,
hand edits, comments and containers, other owners, files nobody should meet, races.

Same set-up as ``tests/test_agents_install.py``: a throw-away HOME, a fake ``ssa``
passed as ``--ssa``, ``actors.cli.app.main`` called in process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest

from actors.agents import _files, _jsonc
from actors.agents._files import ConfigRefused, FileOp, apply_changes
from actors.agents._json_ops import Doc
from actors.agents.installedits import mcp_json_transform
from actors.agents.installmerge import merge_argv
from actors.agents.installsetup import Setup
from tests.test_agents_install import TOOL_ENV, home, run, snapshot, ssa

__all__ = ["home", "ssa"]  # the fixtures, imported for pytest


# --- item 4: no password in a command line; absolute paths in committed files ------------

@pytest.mark.parametrize("url", ["postgresql://me:s3cret@db.example/ssa",
                                 "postgresql://me@db.example/ssa?password=s3cret",
                                 "postgresql://me@db.example/ssa?PassWord=s3cret",
                                 "postgresql://me@db.example/ssa?sslmode=require&sslpassword=s3cret"])
@pytest.mark.parametrize("project", [False, True])
def test_a_password_in_the_db_url_is_refused(home: Path, ssa: str, url: str, project: bool,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(home)
    code, out, err = run(capsys, "install", "claude-code", "--ssa", ssa, "--db", url,
                         *(["--project"] if project else []))
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    for hint in ("PGPASSWORD", "~/.pgpass", "service file"):
        assert hint in err
    assert "s3cret" not in err
    assert snapshot(home) == before  # nothing written anywhere


def test_a_url_without_password_is_installed(home: Path, ssa: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    url = "postgresql://me@db.example/ssa?service=prod"
    code, _out, err = run(capsys, "install", "claude-code", "--ssa", ssa, "--db", url,
                          "--no-db-check")  # no server: the open check is tested elsewhere
    assert code == 0, err
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["command"].endswith(f"--db '{url}'")


def test_project_install_warns_about_absolute_paths_and_portable_writes_plain_ssa(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(capsys, "install", "claude-code", "--project", "--ssa", ssa)
    assert code == 0
    for part in ("warning", ssa, "--portable"):
        assert part in err
    assert run(capsys, "uninstall", "claude-code", "--project")[0] == 0
    code, _out, err = run(capsys, "install", "claude-code", "--project", "--portable")
    assert code == 0
    assert err == ""
    project = Path.cwd()
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["command"] == "ssa hook claude-code"
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["ssa"]
    assert server["command"] == "ssa"
    assert run(capsys, "uninstall", "claude-code", "--project")[0] == 0
    assert snapshot(project) == {}
    code, _out, err = run(capsys, "install", "claude-code", "--portable", "--ssa", ssa)
    assert code == 2
    assert "give one of them" in err


# --- item 7: the person's files stay theirs (root with another user's HOME) --------------

NOBODY = 65534


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file another owner")
def test_root_installing_into_another_users_home_keeps_it_theirs(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "x"}\n')
    settings.chmod(0o644)
    for path in (home, settings.parent, settings):
        os.chown(path, NOBODY, NOBODY)
    assert run(capsys, "install", "claude-code", "--ssa", ssa)[0] == 0
    assert run(capsys, "install", "codex", "--ssa", ssa)[0] == 0
    owned = [settings, settings.with_name("settings.json.ssa-backup"), home / ".claude.json",
             home / ".codex", home / ".codex" / "hooks.json", home / ".codex" / "config.toml",
             home / ".local" / "state" / "ssa",
             home / ".local" / "state" / "ssa" / "installed.json"]
    for path in owned:
        st = path.stat()
        assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY), path
    assert stat.S_IMODE(settings.stat().st_mode) == 0o644
    assert stat.S_IMODE((home / ".claude.json").stat().st_mode) == 0o600
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert settings.stat().st_uid == NOBODY


def test_a_file_this_user_cannot_give_back_is_refused(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "x"}\n')
    mine = settings.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: mine + 1)  # as if another, unprivileged user
    before = snapshot(home)
    code, _out, err = run(capsys, "install", "claude-code", "--ssa", ssa)
    assert code == 2
    assert len(err.splitlines()) == 1
    assert f"uid {mine}" in err
    assert snapshot(home) == before


# --- item 8: files nobody should meet ------------------------------------------------

CHILD_TIMEOUT_S = 30.0
"""Longest a child ``ssa install`` may take before the test fails (seconds)."""


def _install_in_child(home: Path, ssa: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in TOOL_ENV}
    env["HOME"] = str(home)
    code = "import sys; from actors.cli.app import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "install", "claude-code", "--ssa", ssa,
                           *extra], env=env, cwd=home, capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT_S, check=False)


def test_a_fifo_settings_file_is_refused_at_once(home: Path, ssa: str) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    os.mkfifo(settings)
    done = _install_in_child(home, ssa, "--no-mcp")  # used to block forever in open()
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"ssa: {settings} is a FIFO, not a regular file; "
                                        "not changed"]
    assert stat.S_ISFIFO(os.lstat(settings).st_mode)


def test_a_link_to_a_device_is_refused_in_one_line(home: Path, ssa: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.symlink_to("/dev/zero")  # used to read until MemoryError
    code, out, err = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")
    assert code == 2
    assert out == ""
    assert err == "ssa: /dev/zero is a character device, not a regular file; not changed\n"


def test_a_file_over_the_size_limit_is_refused(home: Path, ssa: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    state = home / ".claude.json"
    with state.open("wb") as handle:
        handle.truncate(_files.MAX_FILE_BYTES + 1)  # sparse: costs no disk
    code, _out, err = run(capsys, "install", "claude-code", "--ssa", ssa)
    assert code == 2
    assert len(err.splitlines()) == 1
    assert f"more than the {_files.MAX_FILE_BYTES}" in err
    assert not (home / ".claude").exists() or not (home / ".claude" / "settings.json").exists()


def test_a_hard_linked_settings_file_is_refused_not_split(
        home: Path, ssa: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dotfile = tmp_path / "dotfiles" / "settings.json"
    dotfile.parent.mkdir()
    dotfile.write_text('{"model": "x"}\n')
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    os.link(dotfile, settings)
    before = snapshot(home)
    code, _out, err = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")
    assert code == 2
    assert len(err.splitlines()) == 1
    assert "2 hard links" in err
    assert snapshot(home) == before
    assert os.stat(settings).st_ino == os.stat(dotfile).st_ino  # still one file
    code, out, _err = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp",
                          "--dry-run")
    assert code == 0  # the diff can still be shown, to make the change by hand
    assert '"hooks"' in out


KILLED_CHILD = """
import os, signal, sys
from pathlib import Path
from actors.agents._files import FileOp, apply_changes
os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)
apply_changes([FileOp(Path(sys.argv[1]), lambda old: '{"token": "t", "a": 2}\\n', "a")])
"""


def test_kill_9_leaves_a_private_temp_that_the_next_run_removes(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    target.write_text('{"token": "t"}\n')
    target.chmod(0o600)
    done = subprocess.run([sys.executable, "-c", KILLED_CHILD, str(target)],
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    left = [p for p in tmp_path.iterdir() if p.name.endswith(".ssa-tmp")]
    assert len(left) == 1
    assert stat.S_IMODE(left[0].stat().st_mode) == 0o600
    assert target.read_text() == '{"token": "t"}\n'
    apply_changes([FileOp(target, lambda old: '{"token": "t", "a": 2}\n', "a")])
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".ssa-tmp")]
    assert target.read_text() == '{"token": "t", "a": 2}\n'


WRITER_TIMEOUT_S = 10.0
"""Longest the transform waits for the concurrent writer (seconds)."""


def test_a_rewrite_by_another_program_during_install_is_not_lost(tmp_path: Path) -> None:
    """The other program (Claude Code rewriting ~/.claude.json) takes no lock of ours."""
    target = tmp_path / ".claude.json"
    target.write_text('{"numStartups": 1}\n')
    go, wrote = threading.Event(), threading.Event()

    def writer() -> None:  # rewrites the file atomically, as Claude Code does
        if go.wait(WRITER_TIMEOUT_S):
            temp = tmp_path / "claude-temp"
            temp.write_text('{"numStartups": 2}\n')
            os.replace(temp, target)
        wrote.set()

    thread = threading.Thread(target=writer)
    thread.start()
    calls: list[str | None] = []

    def transform(old: str | None) -> str | None:
        calls.append(old)
        if len(calls) == 1:  # the other program writes while we compute
            go.set()
            assert wrote.wait(WRITER_TIMEOUT_S)
        doc = Doc(old, "s", strict=True)
        doc.set(["mcpServers"], {"ssa": {"command": "ssa"}})
        return doc.text

    try:
        changes = apply_changes([FileOp(target, transform, "mcp")])
    finally:
        go.set()
        thread.join(WRITER_TIMEOUT_S)
    assert not thread.is_alive()
    assert json.loads(target.read_text()) == {"numStartups": 2,
                                              "mcpServers": {"ssa": {"command": "ssa"}}}
    assert calls == ['{"numStartups": 1}\n', '{"numStartups": 2}\n']
    assert changes[0].before == '{"numStartups": 2}\n'


def test_a_file_that_keeps_changing_is_refused_after_bounded_tries(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    target.write_text("{}\n")
    count = 0

    def transform(old: str | None) -> str | None:
        nonlocal count
        count += 1
        target.write_text(f'{{"n": {count}}}\n')  # someone else writes every time
        return '{"ours": true}\n'

    with pytest.raises(ConfigRefused, match="kept changing"):
        apply_changes([FileOp(target, transform, "x")])
    assert count == _files.RETRIES + 1
    assert json.loads(target.read_text()) == {"n": count}


def test_a_big_claude_json_is_not_walked_in_python(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """~/.claude.json of tens of MB: one C pass validates it; only the path we edit is
    parsed in Python (scripts/bench_install.py: 31 MB took 34 s and +580 MB, now 0.9 s
    and +92 MB)."""
    state = tmp_path / ".claude.json"
    projects = {f"/work/p{i}": {"history": [{"display": f"prompt {j}"} for j in range(20)]}
                for i in range(2000)}
    state.write_text(json.dumps({"numStartups": 3, "projects": projects}, indent=2))
    keys_read = 0
    original = _jsonc._Parser.string

    def counting(self: _jsonc._Parser) -> str:
        nonlocal keys_read
        keys_read += 1
        return original(self)

    monkeypatch.setattr(_jsonc._Parser, "string", counting)
    setup = Setup(ssa="/v/bin/ssa", db=None, project=None, home=tmp_path, env={})
    entry = {"command": "/v/bin/ssa", "args": ["mcp"]}
    apply_changes([FileOp(state, mcp_json_transform(setup, str(state), ["mcpServers"], entry,
                                                    install=True, strict=True), "mcp")])
    assert keys_read < 50  # it was every string of the file: > 80,000
    value = json.loads(state.read_text())
    assert value["mcpServers"] == {"ssa": entry}
    assert value["projects"] == projects


@pytest.mark.parametrize(("text", "problem"), [
    ('{"a": {"b": [1, 2,]}}', "line 1"),
    ('{"a": {"b": NaN}}', "NaN|unexpected character"),
    ('{"a": [{"b": "x\ty"}]}', "line 1"),
    ('{"a": {"b": 1}} x', "text after"),
    ('{"a": {"b" 1}}', "line 1"),
])
def test_lazy_parsing_still_refuses_any_broken_nested_value(text: str, problem: str) -> None:
    with pytest.raises(_jsonc.JsoncError, match=problem):
        _jsonc.parse(text, strict=True)


def test_lazy_nodes_give_the_same_tree_as_eager_ones() -> None:
    text = '{\n  "a": {"b": [1, {"c": null}], "d": "e"},\n  "f": [true, 2.5]\n}\n'
    tree = _jsonc.parse(text, strict=True)
    assert tree.value == json.loads(text)
    a = _jsonc.find_member(tree, "a")
    assert a is not None
    b = _jsonc.find_member(a.value, "b")
    assert b is not None
    assert text[b.value.items[1].start:b.value.items[1].end] == '{"c": null}'
    assert b.value.items[1].value == {"c": None}


# --- item 5: a re-install keeps the person's edits --------------------------------------

def _other_ssa(tmp_path: Path, ssa: str) -> str:
    other = tmp_path / "other" / "bin" / "ssa"
    other.parent.mkdir(parents=True)
    shutil.copy(ssa, other)
    return str(other)


def test_reinstall_keeps_the_readmes_scope_all_edit(home: Path, ssa: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """README: "edit the hook command to --scope all"; installing again changed it back."""
    settings = home / ".claude" / "settings.json"
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    settings.write_text(settings.read_text().replace("hook claude-code\"",
                                                     "hook claude-code --scope all\""))
    edited = settings.read_text()
    assert edited.count("--scope all") == 2
    code, out, _ = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")
    assert code == 0
    assert settings.read_text() == edited  # nothing changed at all
    assert "already installed" in out
    assert "kept your edits" in out
    assert "--scope all" in out
    code, _out, _ = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp", "--scope",
                        "project")  # given on the command line: it wins
    assert code == 0
    assert "--scope" not in settings.read_text()


def test_reinstall_keeps_a_scope_edit_in_the_plugin_file(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "install", "pi", "--ssa", ssa)[0] == 0
    extension = home / ".pi" / "agent" / "extensions" / "ssa.ts"
    extension.write_text(extension.read_text().replace('"pi"]', '"pi", "--scope", "all"]'))
    edited = extension.read_text()
    assert run(capsys, "install", "pi", "--ssa", ssa)[0] == 0
    assert extension.read_text() == edited


def test_reinstall_keeps_the_env_the_person_added_to_the_mcp_entry(
        home: Path, ssa: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = home / ".claude.json"
    assert run(capsys, "install", "claude-code", "--ssa", ssa)[0] == 0
    value = json.loads(state.read_text())
    value["mcpServers"]["ssa"]["env"] = {"SSA_DB": "/data/s.sqlite"}
    value["mcpServers"]["ssa"]["timeout"] = 5000
    state.write_text(json.dumps(value, indent=2))
    other = _other_ssa(tmp_path, ssa)
    assert run(capsys, "install", "claude-code", "--ssa", other)[0] == 0
    entry = json.loads(state.read_text())["mcpServers"]["ssa"]
    assert entry == {"type": "stdio", "command": other, "args": ["mcp"],
                     "env": {"SSA_DB": "/data/s.sqlite"}, "timeout": 5000}


def test_reinstall_keeps_a_hand_edited_timeout_and_says_so(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    value = json.loads(settings.read_text())
    value["hooks"]["UserPromptSubmit"][0]["hooks"][0]["timeout"] = 25
    value["hooks"]["UserPromptSubmit"][0]["matcher"] = "mine"
    settings.write_text(json.dumps(value, indent=2))
    code, out, _ = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")
    assert code == 0
    assert json.loads(settings.read_text()) == value
    assert "timeout 25" in out


def test_reinstall_keeps_the_persons_keys_in_the_codex_table(
        home: Path, ssa: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = home / ".codex" / "config.toml"
    assert run(capsys, "install", "codex", "--ssa", ssa)[0] == 0
    config.write_text(config.read_text() + '# my note\nstartup_timeout_sec = 30\n'
                      'env = { SSA_DB = "/data/s.sqlite" }\n')
    other = _other_ssa(tmp_path, ssa)
    assert run(capsys, "install", "codex", "--ssa", other)[0] == 0
    text = config.read_text()
    assert "# my note" in text
    assert tomllib.loads(text)["mcp_servers"]["ssa"] == {
        "command": other, "args": ["mcp"], "startup_timeout_sec": 30,
        "env": {"SSA_DB": "/data/s.sqlite"}}
    before = config.read_bytes()
    assert run(capsys, "install", "codex", "--ssa", other)[0] == 0
    assert config.read_bytes() == before  # twice: nothing changes


@pytest.mark.parametrize(("existing", "explicit", "merged", "kept"), [
    (["s", "hook", "t", "--scope", "all"], frozenset(), ["n", "hook", "t", "--scope", "all"],
     ["--scope all"]),
    (["s", "hook", "t", "--scope=all"], frozenset({"--scope"}), ["n", "hook", "t"], []),
    (["s", "hook", "t", "--agent", "A", "--db", "x"], frozenset({"--db"}),
     ["n", "hook", "t", "--agent", "A", "--db", "y"], []),
    (["s", "hook", "t", "--no-wake"], frozenset(), ["n", "hook", "t"], []),
])
def test_merge_argv(existing: list[str], explicit: frozenset[str], merged: list[str],
                    kept: list[str]) -> None:
    wanted = ["n", "hook", "t", *(["--db", "y"] if "--db" in explicit else [])]
    assert merge_argv(existing, wanted, 3, explicit) == (merged, kept)


# --- item 6: uninstall keeps the person's comments and containers ----------------------

def test_uninstall_keeps_the_comment_above_the_table_after_ours(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o3"\n')
    assert run(capsys, "install", "codex", "--ssa", ssa)[0] == 0
    tail = "\n# my fast profile, keep it\n[profiles.fast]\nmodel = \"o4-mini\"\n# the end\n"
    config.write_text(config.read_text() + tail)
    assert run(capsys, "uninstall", "codex")[0] == 0
    text = config.read_text()
    assert "ssa" not in text
    assert "# my fast profile, keep it\n[profiles.fast]" in text
    assert text.endswith('model = "o4-mini"\n# the end\n')


def test_uninstall_keeps_a_comment_at_the_end_of_the_file(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o3"\n')
    assert run(capsys, "install", "codex", "--ssa", ssa)[0] == 0
    config.write_text(config.read_text() + "# remember to rotate keys\n")
    assert run(capsys, "uninstall", "codex")[0] == 0
    assert config.read_text().endswith("# remember to rotate keys\n")
    assert "mcp_servers" not in config.read_text()


def test_uninstall_keeps_the_comment_between_our_server_and_the_next(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    config = home / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True)
    config.write_text('{\n  "theme": "dark"\n}\n')
    assert run(capsys, "install", "opencode", "--ssa", ssa)[0] == 0
    text = config.read_text()
    position = text.rindex("}\n  }")  # the end of mcp.ssa
    text = (text[:position + 1] + ",\n    // my tracker, keep\n    \"tracker\": "
            '{"type": "local", "command": ["tr"]}' + text[position + 1:])
    config.write_text(text)
    assert _jsonc.parse(text, strict=False).value["mcp"]["tracker"]["command"] == ["tr"]
    assert run(capsys, "uninstall", "opencode")[0] == 0
    after = config.read_text()
    assert "// my tracker, keep" in after
    value = _jsonc.parse(after, strict=False).value
    assert value == {"theme": "dark", "mcp": {"tracker": {"type": "local", "command": ["tr"]}}}


@pytest.mark.parametrize(("text", "index", "expected"), [
    ('{\n  "a": 1, // about a\n  "b": 2\n}', 1, '{\n  "a": 1 // about a\n}'),
    ('{\n  "a": 1,\n  // about b\n  "b": 2\n}', 0, '{\n  // about b\n  "b": 2\n}'),
    ('{\n  "a": 1,\n  "b": 2\n}', 0, '{\n  "b": 2\n}'),
    ('{"a": 1, "b": 2}', 1, '{"a": 1}'),
])
def test_remove_child_keeps_comments_in_the_separator(text: str, index: int,
                                                      expected: str) -> None:
    tree = _jsonc.parse(text, strict=False)
    assert _jsonc.remove_child(text, tree, index) == expected


def test_uninstall_removes_the_backups_the_install_made(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"model": "x"}\n')
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('model = "o3"\n')
    for tool in ("claude-code", "codex"):
        assert run(capsys, "install", tool, "--ssa", ssa)[0] == 0
    assert any(name.endswith(".ssa-backup") for name in snapshot(home))
    for tool in ("claude-code", "codex"):
        code, out, _ = run(capsys, "uninstall", tool)
        assert code == 0
        assert "backup" not in out
    assert [name for name in snapshot(home) if name.endswith(".ssa-backup")] == []
    assert settings.read_text() == '{"model": "x"}\n'


def test_uninstall_removes_codexs_trust_records_of_our_hooks_only(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    codex = home / ".codex"
    codex.mkdir()
    hooks = codex / "hooks.json"
    hooks.write_text('{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", '
                     '"command": "mine"}]}]}}\n')
    config = codex / "config.toml"
    config.write_text('model = "o3"\n')
    assert run(capsys, "install", "codex", "--ssa", ssa)[0] == 0
    # What Codex writes when the person trusts the hooks in /hooks: one record per handler.
    records = {f"{hooks}:user_prompt_submit:0:0": "theirs",
               f"{hooks}:user_prompt_submit:1:0": "ours", f"{hooks}:session_start:0:0": "ours",
               f"{hooks}:post_tool_use:0:0": "ours", f"{hooks}:stop:0:0": "ours",
               f"{hooks}:permission_request:0:0": "ours",
               f"{hooks}:pre_tool_use:0:0": "no hook of ours",
               "/elsewhere/hooks.json:session_start:0:0": "other"}
    text = config.read_text()
    for key, who in records.items():
        text += f'\n[hooks.state."{key}"]\ntrusted_hash = "sha256:{who}"\n'
    config.write_text(text)
    assert run(capsys, "uninstall", "codex")[0] == 0
    state = tomllib.loads(config.read_text())["hooks"]["state"]
    assert state == {key: {"trusted_hash": f"sha256:{who}"} for key, who in records.items()
                     if who != "ours"}
    assert "mcp_servers" not in config.read_text()


@pytest.mark.parametrize("original", ['{\n  "model": "x",\n  "hooks": {}\n}\n',
                                      '{"hooks": {"Stop": []}}\n', "{}", ""])
def test_uninstall_keeps_the_containers_and_the_file_that_were_there(
        home: Path, ssa: str, original: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(original)
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp", "--no-wake")[0] == 0
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert settings.exists()  # it existed before the install: never removed
    assert settings.read_text() == original  # an empty one too (not "{}")


def test_uninstall_keeps_an_empty_commented_mcp_object(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    config = home / ".config" / "opencode" / "opencode.jsonc"
    config.parent.mkdir(parents=True)
    original = '{\n  "theme": "dark",\n  "mcp": { // none yet\n  }\n}\n'
    config.write_text(original)
    assert run(capsys, "install", "opencode", "--ssa", ssa)[0] == 0
    text = config.read_text()
    assert "// none yet" in text
    assert _jsonc.parse(text, strict=False).value["mcp"]["ssa"]["command"] == [ssa, "mcp"]
    assert run(capsys, "uninstall", "opencode")[0] == 0
    assert config.read_text() == original


def test_what_the_install_created_still_goes_after_a_reinstall(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "install", "claude-code", "--ssa", ssa)[0] == 0
    assert run(capsys, "install", "codex", "--ssa", ssa)[0] == 0
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--scope", "all")[0] == 0
    record = home / ".local" / "state" / "ssa" / "installed.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert str(home / ".claude" / "settings.json") in json.loads(record.read_text())["files"]
    for tool in ("claude-code", "codex"):
        assert run(capsys, "uninstall", tool)[0] == 0
    assert snapshot(home) == {}  # the files it created, and its own record, are gone


def test_an_existing_empty_codex_config_stays(home: Path, ssa: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("")
    assert run(capsys, "install", "codex", "--ssa", ssa)[0] == 0
    assert run(capsys, "uninstall", "codex")[0] == 0
    assert config.exists()
    assert config.read_text() == ""


@pytest.mark.parametrize("blank", ["", "   \n\n", "\n", "\t\r\n"])
def test_a_blank_settings_file_gets_its_bytes_back(home: Path, ssa: str, blank: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """An empty or whitespace-only settings file came back as ``{}`` after install and
    uninstall (the chained hooks + MCP edits of Gemini CLI's file too)."""
    files = [home / ".claude" / "settings.json", home / ".claude.json",
             home / ".gemini" / "settings.json"]
    for path in files:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(blank.encode())
    for tool in ("claude-code", "gemini"):
        assert run(capsys, "install", tool, "--ssa", ssa)[0] == 0
    assert all(json.loads(path.read_text())["mcpServers"] for path in files[1:])
    for tool in ("claude-code", "gemini"):
        assert run(capsys, "uninstall", tool)[0] == 0
    for path in files:
        assert path.read_bytes() == blank.encode(), path


def test_a_fifo_in_place_of_ssas_own_record_is_refused_not_waited_on(home: Path,
                                                                      ssa: str) -> None:
    record = home / ".local" / "state" / "ssa" / "installed.json"
    record.parent.mkdir(parents=True)
    os.mkfifo(record)
    done = _install_in_child(home, ssa, "--no-mcp")
    assert done.returncode == 2, done.stderr
    assert "is a FIFO" in done.stderr
