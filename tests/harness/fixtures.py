"""pytest fixtures of the real-agent harness (imported by ``tests/conftest.py``).

* ``agent_install`` (session): the pinned CLIs' install; skipped with the
  reason when it or tmux is missing, a failure under ``CI=true``.
* ``agent_harness``: a :class:`~tests.harness.Harness` under ``tmp_path``,
  closed at teardown (tmux server, child processes, fake servers).
* ``require_tool(name)``: call it in a test to skip (or fail under CI) when
  one tool's binary does not run here (``--version`` fails).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.harness.install import AgentInstall, cache_dir, installed
from tests.harness.session import Harness
from tests.harness.tmux import tmux_available
from tests.harness.tools import tool_named

__all__ = ["agent_harness", "agent_install", "require_tool"]

REQUIRED = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
"""Under CI (``CI=true``) a missing install or tmux fails instead of skipping."""


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def agent_install() -> AgentInstall:
    """The pinned CLIs (``python -m tests.harness.install`` puts them there)."""
    if not tmux_available():
        _unavailable("tmux is not installed (apt-get install tmux)")
    found = installed()
    if found is None:
        _unavailable(f"the pinned agent CLIs are not installed at {cache_dir()} "
                     "(run: python -m tests.harness.install)")
    assert found is not None
    return found


@pytest.fixture
def agent_harness(agent_install: AgentInstall, tmp_path: Path) -> Iterator[Harness]:
    """A harness of the test's own; everything it started is killed at teardown."""
    harness = Harness(tmp_path, agent_install)
    try:
        yield harness
    finally:
        harness.close()


@pytest.fixture
def require_tool(agent_install: AgentInstall) -> Callable[[str], None]:
    """``require_tool("codex")``: skip (fail under CI) unless ``codex --version`` runs."""
    def check(name: str) -> None:
        profile = tool_named(name)
        try:
            binary = profile.executable(agent_install)
        except FileNotFoundError as exc:
            _unavailable(str(exc))
            return
        try:
            done = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                                  timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _unavailable(f"{binary} --version cannot run: {exc}")
            return
        if done.returncode != 0 or profile.version not in done.stdout + done.stderr:
            _unavailable(f"{binary} --version: exit {done.returncode}: "
                         f"{(done.stdout + done.stderr).strip()[-500:]}")

    return check
