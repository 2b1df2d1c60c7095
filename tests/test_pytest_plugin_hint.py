"""``fixture 'ssa_gateway' not found`` says how to turn the kit's fixtures on.

The fixtures are off unless a suite asks (``ssa_fixtures = true`` or ``-p
actors.testing``): the error gave no hint of that. Runs pytest in a child process
on a one-test suite (a plain subprocess, not ``pytester``: about a second).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

RUN_TIMEOUT_S = 40.0


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, check=False)


def test_a_missing_kit_fixture_names_how_to_turn_them_on(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_uses_kit.py").write_text(
        "def test_it(ssa_gateway):\n    assert ssa_gateway.sessions_list() == []\n\n\n"
        "def test_other(not_ours):\n    pass\n")
    off = _pytest(tmp_path)
    assert off.returncode == 1
    assert "fixture 'ssa_gateway' not found" in off.stdout
    hint = ("the session-state-awareness fixtures are off: set 'ssa_fixtures = true' in the "
            "pytest ini ([pytest] or [tool.pytest.ini_options]), or run pytest -p "
            "actors.testing")
    assert off.stdout.count(hint) == 1  # not for a fixture that is not the kit's
    on = _pytest(tmp_path, "-p", "actors.testing", "-k", "test_it")
    assert on.returncode == 0, on.stdout
    (tmp_path / "pytest.ini").write_text("[pytest]\nssa_fixtures = true\n")
    assert _pytest(tmp_path, "-k", "test_it").returncode == 0
