"""The soak (issue 5, item 8) in CI's bounded mode: ``scripts/soak.py`` for 30 seconds.

Sixteen threads of mixed load; throughput, RSS and thread count are printed per
interval; memory and threads must stay flat and the crash-suite invariants must
hold after a reopen (see the script's docstring). ``SSA_SOAK_SECONDS`` and
``SSA_SOAK_SEED`` override the duration and the seed.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECONDS = os.environ.get("SSA_SOAK_SECONDS", "30")
SEED = os.environ.get("SSA_SOAK_SEED", "20261207")


def load_soak() -> ModuleType:
    """``scripts/soak.py`` (not a package), loaded once per process."""
    if "ssa_soak" in sys.modules:
        return sys.modules["ssa_soak"]
    spec = importlib.util.spec_from_file_location("ssa_soak", ROOT / "scripts" / "soak.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ssa_soak"] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(int(float(SECONDS)) + 60)
def test_soak_keeps_memory_threads_and_invariants_flat(tmp_path: Path) -> None:
    soak = load_soak()
    status = soak.main(["--seconds", SECONDS, "--seed", SEED,
                        "--db", str(tmp_path / "state" / "state.sqlite")])
    assert status == 0, "the soak found a violation (printed above)"
