"""The soak (issue 5, item 8) in CI's bounded mode: ``scripts/soak.py`` for 30 seconds.

Sixteen threads of mixed load; throughput, RSS and thread count are printed per
interval; memory and threads must stay flat and the crash-suite invariants must
hold after a reopen (see the script's docstring). ``SSA_SOAK_SECONDS`` and
``SSA_SOAK_SEED`` override the duration and the seed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scripts import soak

SECONDS = os.environ.get("SSA_SOAK_SECONDS", "30")
SEED = os.environ.get("SSA_SOAK_SEED", "20261207")


@pytest.mark.slow
@pytest.mark.timeout(int(float(SECONDS)) + 60)
def test_soak_keeps_memory_threads_and_invariants_flat(tmp_path: Path) -> None:
    status = soak.main(["--seconds", SECONDS, "--seed", SEED,
                        "--db", str(tmp_path / "state" / "state.sqlite")])
    assert status == 0, "the soak found a violation (printed above)"
