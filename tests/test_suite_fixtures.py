"""The suite without the real fixtures: skipped with a note, but a failed run under CI.

Each case runs pytest in a child process on one fixture-based module and one
test marked ``needs_fixtures``, with ``SSA_TEST_FIXTURES`` pointing at an
empty directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN_BOUND_S = 40.0
"""Longest one child pytest run may take, below pytest-timeout's 60 s."""
TARGETS = ("tests/test_upstream_pi.py",
           "tests/test_cli.py::test_classify_prints_one_decision_per_line_using_the_monitors_"
           "classifier")


def _pytest(fixtures: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["SSA_TEST_FIXTURES"] = str(fixtures)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
         "--continue-on-collection-errors", *TARGETS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_BOUND_S, check=False)


@pytest.mark.slow
def test_without_fixtures_the_tests_that_need_them_are_skipped_with_a_note(
    tmp_path: Path,
) -> None:
    done = _pytest(tmp_path, ci=None)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 skipped" in done.stdout
    assert "note: 8 fixture-based test modules and the tests marked needs_fixtures were " \
        "skipped" in done.stdout
    assert f"not at {tmp_path / 'upstream'}" in done.stdout


@pytest.mark.slow
def test_under_ci_missing_fixtures_fail_the_run(tmp_path: Path) -> None:
    done = _pytest(tmp_path, ci="true")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ERROR collecting tests/test_upstream_pi.py" in done.stdout
    assert "ERROR tests/test_cli.py::test_classify_prints_one_decision" in done.stdout
    assert f"CI: the real upstream fixtures are not at {tmp_path / 'upstream'}" in done.stdout
    assert "skipped" not in done.stdout
    assert _pytest(tmp_path, ci="false").returncode == 0  # CI=false is not CI
