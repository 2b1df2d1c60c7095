"""``ssa install <tool>`` in a harness home, as a person would run it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.harness.home import Home
from tests.harness.watch import SSA

__all__ = ["ssa_install"]


def ssa_install(tool: str, home: Home, project: Path | None = None) -> None:
    """Run ``ssa install TOOL`` with ``home``'s environment (a harness ``setup``).

    ``project`` is ignored (the ``setup(home, project)`` signature). Blocks up to 60 s.

    Raises:
        AssertionError: ``ssa install`` failed (its output is the message).
        subprocess.TimeoutExpired: it ran longer than 60 s.
    """
    del project
    env = {**home.env(), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "CODEX_HOME": str(home.root / ".codex")}
    done = subprocess.run([SSA, "install", tool], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
