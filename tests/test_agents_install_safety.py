"""``ssa install`` / ``ssa uninstall`` against what an adversary tried: secrets in the URL,
hand edits, comments and containers, other owners, files nobody should meet, races.

Same set-up as ``tests/test_agents_install.py``: a throw-away HOME, a fake ``ssa``
passed as ``--ssa``, ``actors.cli.app.main`` called in process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.cli.app import main
from tests.test_agents_install import home, snapshot, ssa

__all__ = ["home", "ssa"]  # the fixtures, imported for pytest


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- item 4: no password in a command line; absolute paths in committed files ------------

@pytest.mark.parametrize("url", ["postgresql://me:s3cret@db.example/ssa",
                                 "postgresql://me@db.example/ssa?password=s3cret"])
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
    code, _out, err = run(capsys, "install", "claude-code", "--ssa", ssa, "--db", url)
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
