"""Where the signal log lives by default (standard library only, cheap to import)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_state_path"]


def default_state_path() -> Path:
    """The embedded default database path (``api-contract.md``, ``Gateway.open``).

    ``$SSA_STATE_DIR/state.sqlite``, else ``$XDG_STATE_HOME/ssa/state.sqlite``,
    else ``~/.local/state/ssa/state.sqlite``. Pure apart from reading the
    environment; any thread; never blocks.
    """
    if os.environ.get("SSA_STATE_DIR"):
        return Path(os.environ["SSA_STATE_DIR"]) / "state.sqlite"
    if os.environ.get("XDG_STATE_HOME"):
        return Path(os.environ["XDG_STATE_HOME"]) / "ssa" / "state.sqlite"
    return Path.home() / ".local" / "state" / "ssa" / "state.sqlite"
