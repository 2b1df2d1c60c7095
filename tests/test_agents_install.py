"""``ssa install`` / ``ssa uninstall``: what each tool gets, and that nothing of the person's moves.

Every test runs with a throw-away HOME (and the tools' directory variables
cleared), a fake ``ssa`` script passed as ``--ssa``, and calls
``actors.cli.app.main`` in process.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import stat
import subprocess
import threading
import time
import tomllib
from pathlib import Path

import pytest

from actors.agents import _jsonc
from actors.agents._files import ConfigRefused, FileOp, apply_changes
from actors.agents._json_ops import Doc
from actors.agents.installedits import is_our_hook_command, is_our_mcp_entry
from actors.agents.installsetup import MARKER
from actors.cli.app import main

TOOL_ENV = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME", "PI_CODING_AGENT_DIR", "SSA_DB",
            "SSA_STATE_DIR", "XDG_STATE_HOME")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throw-away HOME with no tool variables set; cwd is a project directory in it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in TOOL_ENV:
        monkeypatch.delenv(name, raising=False)
    project = home / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return home


@pytest.fixture
def ssa(tmp_path: Path) -> str:
    """An executable stand-in for the ssa script (its path is what gets installed)."""
    script = tmp_path / "venv" / "bin" / "ssa"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    return str(script)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


CLAUDE_SETTINGS = [
    # two-space indent, other hooks of the person's
    '{\n  "permissions": {\n    "allow": ["Bash(ls:*)"]\n  },\n  "hooks": {\n'
    '    "UserPromptSubmit": [\n      {"hooks": [{"type": "command", "command": "echo hi"}]}\n'
    '    ]\n  },\n  "model": "sonnet"\n}\n',
    # four spaces, no hooks, no final newline
    '{\n    "model": "opus",\n    "env": {"A": "1"}\n}',
    # tabs
    '{\n\t"statusLine": {\n\t\t"type": "command",\n\t\t"command": "x"\n\t}\n}\n',
    # all on one line
    '{"model": "haiku", "hooks": {"SessionStart": [{"matcher": "startup", "hooks": []}]}}\n',
    # empty object
    "{}\n",
    # unicode and escapes
    '{\n  "name": "caf\\u00e9 ☕",\n  "x": "a\\"b"\n}\n',
]


@pytest.mark.parametrize("original", CLAUDE_SETTINGS)
def test_claude_settings_round_trip(home: Path, ssa: str, original: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(original)
    settings.chmod(0o644)
    code, out, _ = run(capsys, "install", "claude-code", "--ssa", ssa)
    assert code == 0, out
    data = json.loads(settings.read_text())
    before = json.loads(original)
    for key, value in before.items():
        if key != "hooks":
            assert data[key] == value
    command = f"{ssa} hook claude-code"
    for event in ("UserPromptSubmit", "SessionStart"):
        ours = [g for g in data["hooks"][event] if any(h.get("command") == command
                                                      for h in g["hooks"])]
        assert ours == [{"hooks": [{"type": "command", "command": command, "timeout": 10}]}]
        assert data["hooks"][event][:-1] == before.get("hooks", {}).get(event, [])
    assert stat.S_IMODE(settings.stat().st_mode) == 0o644  # the person's mode is kept
    assert (settings.parent / "settings.json.ssa-backup").read_text() == original
    mcp = json.loads((home / ".claude.json").read_text())
    assert mcp == {"mcpServers": {"ssa": {"type": "stdio", "command": ssa, "args": ["mcp"],
                                          "env": {}}}}
    assert stat.S_IMODE((home / ".claude.json").stat().st_mode) == 0o600

    code, out, _ = run(capsys, "uninstall", "claude-code")
    assert code == 0
    # byte for byte (a "{}" file that was there before the install stays too)
    assert settings.read_text() == original
    assert not (home / ".claude.json").exists()


def test_claude_state_file_round_trip(home: Path, ssa: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """~/.claude.json is Claude Code's own state file: only mcpServers.ssa changes."""
    state = home / ".claude.json"
    original = json.dumps({"numStartups": 3, "projects": {"/x": {"mcpServers": {}}},
                           "mcpServers": {"other": {"command": "o", "args": []}}}, indent=2)
    state.write_text(original)
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--db", "/data/s.sqlite")[0] == 0
    data = json.loads(state.read_text())
    assert data["mcpServers"]["other"] == {"command": "o", "args": []}
    assert data["mcpServers"]["ssa"]["args"] == ["mcp", "--db", "/data/s.sqlite"]
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["command"] == (
        f"{ssa} hook claude-code --db /data/s.sqlite")
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert state.read_text() == original


def test_claude_project_scope(home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "install", "claude-code", "--project", "--ssa", ssa)
    assert code == 0
    project = Path.cwd()
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["ssa"]["command"] == ssa
    assert "UserPromptSubmit" in json.loads(
        (project / ".claude" / "settings.json").read_text())["hooks"]
    assert "approve" in out
    assert not (home / ".claude.json").exists()
    assert run(capsys, "uninstall", "claude-code", "--project")[0] == 0
    assert snapshot(project) == {}


def test_install_twice_changes_nothing(home: Path, ssa: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    for tool in ("claude-code", "codex", "opencode", "pi"):
        assert run(capsys, "install", tool, "--ssa", ssa)[0] == 0
    first = snapshot(home)
    for tool in ("claude-code", "codex", "opencode", "pi"):
        code, out, _ = run(capsys, "install", tool, "--ssa", ssa)
        assert code == 0
        assert "already installed" in out
        assert "wrote" not in out
        assert "updated" not in out
    assert snapshot(home) == first


def test_update_replaces_our_entry(home: Path, ssa: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A second install with another ssa path replaces ours (never adds a second hook)."""
    assert run(capsys, "install", "claude-code", "--ssa", ssa)[0] == 0
    other = tmp_path / "other" / "bin" / "ssa"
    other.parent.mkdir(parents=True)
    shutil.copy(ssa, other)
    assert run(capsys, "install", "claude-code", "--ssa", str(other))[0] == 0
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    commands = [h["command"] for g in hooks["UserPromptSubmit"] for h in g["hooks"]]
    assert commands == [f"{other} hook claude-code"]


def test_codex_round_trip(home: Path, ssa: str, capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    codex = home / "codexhome"
    monkeypatch.setenv("CODEX_HOME", str(codex))
    codex.mkdir()
    config = ('# my codex config\nmodel = "o3"   # favourite\n\n[mcp_servers.other]\n'
              'command = "other"   # keep\nargs = ["x"]\n\n[profiles.fast]\nmodel = "o4-mini"\n')
    hooks = ('{\n  "hooks": {\n    "Stop": [{"hooks": [{"type": "command", "command": "y"}]}]\n'
             '  }\n}\n')
    (codex / "config.toml").write_text(config)
    (codex / "hooks.json").write_text(hooks)
    code, out, _ = run(capsys, "install", "codex", "--ssa", ssa)
    assert code == 0
    assert "/hooks" in out
    parsed = tomllib.loads((codex / "config.toml").read_text())
    assert parsed["mcp_servers"]["ssa"] == {"command": ssa, "args": ["mcp"]}
    assert parsed["mcp_servers"]["other"] == {"command": "other", "args": ["x"]}
    assert (codex / "config.toml").read_text().startswith(config)  # appended, nothing moved
    data = json.loads((codex / "hooks.json").read_text())
    assert data["hooks"]["Stop"] == [  # the person's group stays first; ours follows
        {"hooks": [{"type": "command", "command": "y"}]},
        {"hooks": [{"type": "command", "command": f"{ssa} hook codex --activity",
                    "timeout": 10}]}]
    assert data["hooks"]["PermissionRequest"] == [
        {"hooks": [{"type": "command", "command": f"{ssa} hook codex --activity",
                    "timeout": 10}]}]
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == f"{ssa} hook codex"
    assert not (home / ".codex").exists()  # $CODEX_HOME respected
    assert run(capsys, "uninstall", "codex")[0] == 0
    assert (codex / "config.toml").read_text() == config
    assert (codex / "hooks.json").read_text() == hooks


def test_opencode_jsonc_round_trip(home: Path, ssa: str, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = home / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    config = xdg / "opencode" / "opencode.jsonc"
    config.parent.mkdir(parents=True)
    original = ('{\n  // my settings\n  "$schema": "https://opencode.ai/config.json",\n'
                '  "theme": "dark", /* trailing */\n  "mcp": {\n'
                '    "x": {"type": "local", "command": ["x"]},\n  },\n}\n')
    config.write_text(original)
    assert run(capsys, "install", "opencode", "--ssa", ssa)[0] == 0
    text = config.read_text()
    assert "// my settings" in text
    assert "/* trailing */" in text
    tree = _jsonc.parse(text, strict=False)
    assert tree.value["mcp"]["ssa"] == {"type": "local", "command": [ssa, "mcp"],
                                        "enabled": True}
    assert tree.value["mcp"]["x"] == {"type": "local", "command": ["x"]}
    plugin = xdg / "opencode" / "plugins" / "ssa.js"
    source = plugin.read_text()
    assert source.startswith(MARKER)
    assert json.dumps([ssa, "hook", "opencode"]) in source
    assert "__SSA" not in source
    assert stat.S_IMODE(plugin.stat().st_mode) == 0o600
    assert stat.S_IMODE(plugin.parent.stat().st_mode) == 0o700
    assert run(capsys, "uninstall", "opencode")[0] == 0
    assert config.read_text() == original
    assert not plugin.exists()
    assert not (plugin.parent / "ssa.js.ssa-backup").exists()


def test_opencode_project_creates_opencode_json(home: Path, ssa: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "install", "opencode", "--project", "--ssa", ssa)[0] == 0
    project = Path.cwd()
    assert json.loads((project / "opencode.json").read_text())["mcp"]["ssa"]["type"] == "local"
    assert (project / ".opencode" / "plugins" / "ssa.js").is_file()


def test_pi_extension(home: Path, ssa: str, capsys: pytest.CaptureFixture[str],
                      monkeypatch: pytest.MonkeyPatch) -> None:
    agent = home / "pi-agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    code, out, _ = run(capsys, "install", "pi", "--ssa", ssa, "--db", "rel.sqlite")
    assert code == 0
    assert "no built-in MCP" in out
    extension = agent / "extensions" / "ssa.ts"
    source = extension.read_text()
    assert json.dumps([ssa, "hook", "pi", "--db", str(Path.cwd() / "rel.sqlite")]) in source
    assert 'customType: "ssa-notice"' in source
    assert "display: false" in source
    assert run(capsys, "uninstall", "pi")[0] == 0
    assert not extension.exists()


def test_foreign_plugin_file_refused(home: Path, ssa: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    extension = home / ".pi" / "agent" / "extensions" / "ssa.ts"
    extension.parent.mkdir(parents=True)
    extension.write_text("export default function () {}\n")
    code, _, err = run(capsys, "install", "pi", "--ssa", ssa)
    assert code == 2
    assert err.count("\n") == 1
    assert "not written by ssa" in err
    assert extension.read_text() == "export default function () {}\n"
    code, _, err = run(capsys, "uninstall", "pi")
    assert code == 2
    assert extension.exists()


@pytest.mark.parametrize(("tool", "relative", "content"), [
    ("claude-code", ".claude/settings.json", '{"hooks": {,}}'),
    ("claude-code", ".claude/settings.json", '{"a": 1,}\n'),  # trailing comma: not JSON
    ("claude-code", ".claude/settings.json", '// comment\n{}\n'),
    ("claude-code", ".claude/settings.json", '["not", "an", "object"]\n'),
    ("claude-code", ".claude/settings.json", '{"hooks": []}\n'),
    ("claude-code", ".claude.json", '{"mcpServers": {"ssa": {"command": "npx", "args": []}}}'),
    ("codex", ".codex/config.toml", 'model = "o3\n'),
    ("codex", ".codex/config.toml", '[mcp_servers.ssa]\ncommand = "someone-else"\n'),
    ("codex", ".codex/hooks.json", "{"),
    ("opencode", ".config/opencode/opencode.json", '{"mcp": {"x": 1 /* open comment }'),
    ("opencode", ".config/opencode/opencode.json", b"\xff\xfe{}".decode("latin-1")),
])
def test_unparsable_or_foreign_file_refused(home: Path, ssa: str, tool: str, relative: str,
                                            content: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = content.encode("latin-1") if "\xff" in content else content.encode()
    path.write_bytes(raw)
    before = snapshot(home)
    code, out, err = run(capsys, "install", tool, "--ssa", ssa)
    assert code == 2
    assert out == ""
    assert err.startswith("ssa: ")
    assert err.count("\n") == 1
    assert str(path) in err
    assert snapshot(home) == before  # nothing written anywhere, no backup
    code, _, err = run(capsys, "uninstall", tool)
    # Uninstall leaves another program's "ssa" server alone (and has nothing else to do);
    # a file it cannot parse is refused.
    foreign = "someone-else" in content or '"npx"' in content
    assert code == (0 if foreign else 2), err
    assert snapshot(home) == before


def test_dry_run_writes_nothing(home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "model": "x"\n}\n')
    before = snapshot(home)
    code, out, _ = run(capsys, "install", "claude-code", "--ssa", ssa, "--dry-run")
    assert code == 0
    assert snapshot(home) == before
    assert f"--- {settings}" in out
    assert f"+++ {settings}" in out
    assert '+  "hooks": {' in out
    assert '-  "model": "x"' in out
    assert f"+++ {home / '.claude.json'}" in out
    assert "--- /dev/null" in out
    assert "nothing written" in out
    run(capsys, "install", "claude-code", "--ssa", ssa)
    after_install = snapshot(home)
    code, out, _ = run(capsys, "uninstall", "claude-code", "--dry-run")
    assert code == 0
    assert snapshot(home) == after_install
    assert '-  "hooks": {' in out
    assert "+++ /dev/null" in out


def test_uninstall_of_a_file_we_never_touched(home: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", '
                        '"command": "/usr/bin/ssa-other hook claude-codex"}]}]}}')
    before = snapshot(home)
    for tool in ("claude-code", "codex", "opencode", "pi"):
        code, out, _ = run(capsys, "uninstall", tool)
        assert code == 0
        assert "not installed" in out
    assert snapshot(home) == before


def test_uninstall_keeps_the_persons_entries_beside_ours(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A group the person extended with a hook of their own keeps that hook."""
    run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")
    settings = home / ".claude" / "settings.json"
    doc = Doc(settings.read_text(), "s", strict=True)
    doc.append(["hooks", "UserPromptSubmit", 0, "hooks"],  # type: ignore[list-item]
               {"type": "command", "command": "mine"})
    settings.write_text(doc.text)
    run(capsys, "uninstall", "claude-code")
    data = json.loads(settings.read_text())
    assert data == {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                                                               "command": "mine"}]}]}}


def test_claude_plugin_directory(home: Path, ssa: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "plugin-market"
    code, out, _ = run(capsys, "install", "claude-code", "--plugin", str(root), "--ssa", ssa)
    assert code == 0
    assert f"claude plugin marketplace add {root}" in out
    assert "claude plugin install ssa@ssa-local" in out
    market = json.loads((root / ".claude-plugin" / "marketplace.json").read_text())
    assert market["name"] == "ssa-local"
    assert market["plugins"] == [{"name": "ssa", "source": "./plugins/ssa",
                                  "description": market["plugins"][0]["description"]}]
    plugin = root / "plugins" / "ssa"
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "ssa"
    assert isinstance(manifest["version"], str)
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "SessionStart", "Stop", "StopFailure",
                          "Notification", "SessionEnd"}
    for event in ("UserPromptSubmit", "SessionStart"):
        assert hooks[event] == [{"hooks": [{"type": "command",
                                            "command": f"{ssa} hook claude-code",
                                            "timeout": 10}]}]
    # The waiting hook that wakes an idle manager (issue 35), which also says where the
    # session stands (issue 33), and the other events that do.
    assert hooks["Stop"] == [{"hooks": [{"type": "command",
                                         "command": f"{ssa} hook claude-code --wait --activity",
                                         "asyncRewake": True, "timeout": 2147483}]}]
    activity = {"type": "command", "command": f"{ssa} hook claude-code --activity",
                "async": True, "timeout": 30}
    assert hooks["StopFailure"] == hooks["SessionEnd"] == [{"hooks": [activity]}]
    assert hooks["Notification"] == [{"matcher": "permission_prompt|idle_prompt",
                                      "hooks": [activity]}]
    servers = json.loads((plugin / ".mcp.json").read_text())["mcpServers"]
    assert servers == {"ssa": {"command": ssa, "args": ["mcp"]}}
    assert not (home / ".claude").exists()
    assert not (home / ".claude.json").exists()
    assert run(capsys, "install", "claude-code", "--plugin", str(root), "--ssa", ssa)[1].count(
        "already installed") == 4
    assert run(capsys, "uninstall", "claude-code", "--plugin", str(root))[0] == 0
    assert snapshot(root) == {}


def test_symlinked_settings_stay_a_link(home: Path, ssa: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "x"}\n')
    link = home / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    assert link.is_symlink()
    assert "hooks" in json.loads(dotfiles.read_text())
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert dotfiles.read_text() == '{"model": "x"}\n'
    assert link.is_symlink()


def test_no_ssa_found(home: Path, capsys: pytest.CaptureFixture[str],
                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(home))
    monkeypatch.setattr("sys.argv", ["python"])
    code, _, err = run(capsys, "install", "pi")
    assert code == 2
    assert "--ssa PATH" in err


def test_our_entries_are_recognised_by_what_they_run() -> None:
    assert is_our_hook_command("/home/u/.venv/bin/ssa hook codex", "codex")
    assert is_our_hook_command("'/path with space/ssa' hook pi --db /x", "pi")
    assert not is_our_hook_command("/home/u/.venv/bin/ssa hook codex", "pi")
    assert not is_our_hook_command("echo ssa hook codex", "codex")
    assert not is_our_hook_command("'unterminated", "codex")
    assert is_our_mcp_entry({"command": "/v/bin/ssa", "args": ["mcp", "--db", "x"]})
    assert is_our_mcp_entry({"type": "local", "command": ["/v/bin/ssa", "mcp"]})
    assert not is_our_mcp_entry({"command": "npx", "args": ["ssa", "mcp"]})
    assert not is_our_mcp_entry({"command": "/v/bin/ssa", "args": []})


# --- concurrency -------------------------------------------------------------------

def _add_key(path: str, key: str) -> None:
    def transform(old: str | None) -> str | None:
        doc = Doc(old, path, strict=True)
        doc.set([key], True)
        return doc.text
    apply_changes([FileOp(Path(path), transform, key)])


def test_two_installs_at_once_threads(tmp_path: Path) -> None:
    target = tmp_path / "conf" / "settings.json"
    start = threading.Barrier(8, timeout=20)

    def worker(i: int) -> None:
        start.wait()
        for j in range(10):
            _add_key(str(target), f"k{i}-{j}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    data = json.loads(target.read_text())
    assert set(data) == {f"k{i}-{j}" for i in range(8) for j in range(10)}


def _process_worker(path: str, prefix: str, count: int) -> None:
    for j in range(count):
        _add_key(path, f"{prefix}-{j}")


@pytest.mark.timeout(120)
def test_two_installs_at_once_processes(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    target.write_text("{}\n")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_process_worker, args=(str(target), f"p{i}", 15))
               for i in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=90)
    alive = [w for w in workers if w.is_alive()]
    for w in alive:
        w.kill()
        w.join(timeout=10)
    assert not alive
    assert all(w.exitcode == 0 for w in workers)
    assert set(json.loads(target.read_text())) == {f"p{i}-{j}" for i in range(2)
                                                   for j in range(15)}


def test_refusal_in_a_later_file_writes_nothing(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"

    def refuse(old: str | None) -> str | None:
        raise ConfigRefused("b: no")

    with pytest.raises(ConfigRefused):
        apply_changes([FileOp(first, lambda old: "{}\n", "a"), FileOp(second, refuse, "b")])
    assert not first.exists()
    assert not second.exists()


def test_a_failed_write_leaves_the_old_file(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "s.json"
    target.write_text('{"a": 1}\n')

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        apply_changes([FileOp(target, lambda old: '{"a": 2}\n', "a")])
    assert target.read_text() == '{"a": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]  # no temp file left


# --- the OpenCode plugin's behaviour, under Node ---------------------------------

NODE = shutil.which("node")

PLUGIN_DRIVER = """
import { SsaNotices } from "./plugin.mjs"
const hooks = await SsaNotices({ client: undefined, directory: "/proj" })
await hooks["chat.message"]({ sessionID: "s1", agent: "build" },
                            { message: { id: "m1" }, parts: [] })
const main = { system: ["base"] }
await hooks["experimental.chat.system.transform"]({ sessionID: "s1", model: {} }, main)
const title = { system: [] }
await hooks["experimental.chat.system.transform"]({ sessionID: "s1", model: {} }, title)
const other = { system: [] }
await hooks["experimental.chat.system.transform"]({ sessionID: "s2", model: {} }, other)
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "s1" } } })
const after = { system: [] }
await hooks["experimental.chat.system.transform"]({ sessionID: "s1", model: {} }, after)
await hooks["experimental.chat.system.transform"](undefined, undefined)
console.log(JSON.stringify({ main: main.system, title: title.system, other: other.system,
                             after: after.system }))
"""


WAITER_INPUT_TIMEOUT_S = 10.0
"""Longest the plugin test waits for the waiting hook's input line (seconds)."""


@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.parametrize("hook", ["prints", "fails", "missing", "slow"])
def test_opencode_plugin_under_node(tmp_path: Path, hook: str) -> None:
    """The rendered plugin: one hook run per turn, its text in every request of the turn."""
    from actors.agents.installedits import data_text as _data_text
    from actors.agents.installedits import render_plugin
    from actors.agents.installsetup import Setup

    fake = tmp_path / "ssa"
    seen = tmp_path / "stdin.json"
    body = {"prints": f"cat > {seen}\necho 'Session \"k\" changed (other actor).'\n",
            "fails": "echo partial; exit 3\n",
            "missing": "",
            "slow": "sleep 30 & wait\n"}[hook]
    waited = tmp_path / "wait.json"
    if hook != "missing":  # the waiting hook (--wait, issue 35) records its input and ends
        fake.write_text(f'#!/bin/sh\ncase "$*" in *--wait*) head -n 1 > {waited}.tmp && '
                        f'mv {waited}.tmp {waited}; exit 0;; esac\n' + body)
        fake.chmod(0o755)
    setup = Setup(ssa=str(fake), db=None, project=None, home=tmp_path, env={})
    source = render_plugin(_data_text("actors.agents.tools.opencode", "plugin.js"), setup,
                           "opencode")
    if hook == "slow":
        source = source.replace("const TIMEOUT_MS = 10000", "const TIMEOUT_MS = 300")
    (tmp_path / "plugin.mjs").write_text(source)
    (tmp_path / "driver.mjs").write_text(PLUGIN_DRIVER)
    assert NODE is not None
    done = subprocess.run([NODE, "driver.mjs"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    if hook == "prints":
        text = 'Session "k" changed (other actor).'
        assert result == {"main": ["base", text], "title": [text], "other": [], "after": []}
        assert json.loads(seen.read_text()) == {
            "session_id": "s1", "cwd": "/proj",
            "hook_event_name": "experimental.chat.system.transform"}
        # The session's waiting hook was started too, for the push path's stream form; the
        # plugin does not wait for it (it never keeps OpenCode running), so neither does
        # node: its input line lands a moment later (atomically, by rename).
        deadline = time.monotonic() + WAITER_INPUT_TIMEOUT_S
        while not waited.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert json.loads(waited.read_text()) == {
            "session_id": "s1", "cwd": "/proj", "hook_event_name": "ssa-push"}
    else:
        assert result == {"main": ["base"], "title": [], "other": [], "after": []}


def test_package_data_ships_the_templates() -> None:
    from actors.agents.installedits import data_text as _data_text

    for package, name in (("actors.agents.tools.opencode", "plugin.js"),
                          ("actors.agents.tools.pi", "extension.ts")):
        text = _data_text(package, name)
        assert '["__SSA_HOOK_ARGV__"]' in text
        assert "__SSA_HOOK_TIMEOUT_MS__" in text


def test_created_directories_are_private(home: Path, ssa: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    old = os.umask(0o022)
    try:
        assert run(capsys, "install", "codex", "--ssa", ssa)[0] == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((home / ".codex").stat().st_mode) == 0o700
    for name in ("hooks.json", "config.toml"):
        assert stat.S_IMODE((home / ".codex" / name).stat().st_mode) == 0o600


def test_install_scope_is_written_into_the_hook_and_changed_in_place(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    first = json.loads(settings.read_text())
    assert first["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == (
        f"{ssa} hook claude-code")
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp", "--scope", "all")[0] == 0
    hooks = json.loads(settings.read_text())["hooks"]
    assert [g["hooks"][0]["command"] for g in hooks["UserPromptSubmit"] + hooks["SessionStart"]
            ] == [f"{ssa} hook claude-code --scope all"] * 2  # replaced, not added
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert not settings.exists()


def test_uninstall_leaves_another_programs_ssa_server_and_removes_our_hooks(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    theirs = '{"mcpServers": {"ssa": {"command": "/opt/other/ssa-server"}}}\n'
    (home / ".claude.json").write_text(theirs)
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    code, _out, err = run(capsys, "uninstall", "claude-code")
    assert code == 0, err
    assert (home / ".claude.json").read_text() == theirs
    assert not (home / ".claude" / "settings.json").exists()


def test_a_settings_file_nested_too_deeply_is_refused_in_one_line(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    depth = 5000
    settings.write_text('{"a":' + "[" * depth + "]" * depth + "}")
    before = settings.read_bytes()
    code, _out, err = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")
    assert code == 2
    assert len(err.splitlines()) == 1
    assert "nested too deeply" in err
    assert settings.read_bytes() == before


def test_claude_code_gets_the_waiting_stop_hook_unless_no_wake(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = home / ".claude" / "settings.json"
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    stop = json.loads(settings.read_text())["hooks"]["Stop"]
    assert stop == [{"hooks": [{"type": "command",
                                "command": f"{ssa} hook claude-code --wait --activity",
                                "asyncRewake": True, "timeout": 2147483}]}]
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp", "--no-wake")[0] == 0
    # No waiting hook; the turn's end is still told (issue 33 item 2).
    assert json.loads(settings.read_text())["hooks"]["Stop"] == [{"hooks": [{
        "type": "command", "command": f"{ssa} hook claude-code --no-wake --activity",
        "async": True, "timeout": 30}]}]
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    assert run(capsys, "uninstall", "claude-code")[0] == 0
    assert not settings.exists() or "ssa" not in settings.read_text()


@pytest.mark.parametrize(("tool", "folder", "events", "timeout"), [
    ("gemini", ".gemini", ("BeforeAgent", "SessionStart"), 10000),  # milliseconds
    ("qwen", ".qwen", ("UserPromptSubmit", "SessionStart"), 10),  # seconds
])
def test_gemini_and_qwen_get_their_prompt_hooks_and_the_mcp_server_in_one_file(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tool: str, folder: str, events: tuple[str, ...],
        timeout: int) -> None:
    """Issue 35: Gemini CLI and Qwen Code as managers."""
    for name in ("GEMINI_CLI_HOME", "QWEN_HOME"):
        monkeypatch.delenv(name, raising=False)
    settings = home / folder / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"theme": "Dracula", "hooks": {"AfterAgent": [{"hooks": []}]}}\n')
    code, out, _ = run(capsys, "install", tool, "--ssa", ssa)
    assert code == 0
    assert ("told at its next prompt" if tool == "gemini" else "messaging socket") in out
    value = json.loads(settings.read_text())
    assert value["theme"] == "Dracula"  # the person's settings stay
    assert value["hooks"]["AfterAgent"] == [{"hooks": []}]
    for event in events:
        assert value["hooks"][event] == [{"hooks": [{"type": "command",
                                                     "command": f"{ssa} hook {tool}",
                                                     "timeout": timeout}]}]
    assert value["mcpServers"]["ssa"] == {"command": ssa, "args": ["mcp"]}
    assert run(capsys, "install", tool, "--ssa", ssa)[0] == 0  # twice: no change
    assert json.loads(settings.read_text()) == value
    assert run(capsys, "uninstall", tool)[0] == 0
    assert json.loads(settings.read_text()) == {"theme": "Dracula",
                                                "hooks": {"AfterAgent": [{"hooks": []}]}}


def test_the_mcp_server_is_registered_without_the_mcp_sdk(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: ``ssa mcp`` serves without the MCP SDK, so ``ssa install`` registers it even
    where ``mcp`` cannot be imported (it used to skip it and ask for the ``mcp`` extra)."""
    import builtins
    import importlib.util

    real_import, real_find = builtins.__import__, importlib.util.find_spec

    def no_mcp(name: str, *args: object, **kwargs: object) -> object:
        if name == "mcp" or name.startswith("mcp."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    def find_no_mcp(name: str, *args: object, **kwargs: object) -> object:
        if name == "mcp" or name.startswith("mcp."):
            return None
        return real_find(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_mcp)
    monkeypatch.setattr(importlib.util, "find_spec", find_no_mcp)
    code, out, err = run(capsys, "install", "claude-code", "--ssa", ssa)
    assert code == 0, err
    assert "extra" not in out + err
    servers = json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert servers["ssa"]["command"] == ssa
    assert servers["ssa"]["args"] == ["mcp"]


def test_permission_wait_is_set_and_turned_off_again(
        home: Path, ssa: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Adversary round 4 (finding 10): ``--permission-wait 0`` was refused, so the opt-in
    could be dropped only by uninstalling."""
    settings = home / ".claude" / "settings.json"
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp",
               "--permission-wait", "5")[0] == 0
    notification = json.loads(settings.read_text())["hooks"]["Notification"]
    assert notification[0]["hooks"][0]["command"].endswith("--activity --permission-wait 5")
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp")[0] == 0
    assert "--permission-wait 5" in settings.read_text()  # a re-install keeps it
    assert run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp",
               "--permission-wait", "0")[0] == 0
    assert "--permission-wait" not in settings.read_text()
    code, _out, err = run(capsys, "install", "claude-code", "--ssa", ssa, "--no-mcp",
                          "--permission-wait", "-1")
    assert code == 2
    assert "from 0 (off)" in err
