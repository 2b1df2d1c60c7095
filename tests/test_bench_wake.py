"""The wake benchmark (``scripts/bench_wake.py``): a quick run prints every figure, and an idle
waiting hook costs nothing measurable (issue 35)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[1]


def test_a_quick_run_prints_every_figure_within_the_goals() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_wake.py"), "--runs",
                           "3", "--idle", "2", "--json"], capture_output=True, text=True,
                          timeout=100, check=True, cwd=ROOT)
    figures = json.loads(done.stdout)
    assert set(figures) == {
        "wake_p50_s", "wake_p95_s", "wake_with_ssa_watch_p50_s", "wake_with_ssa_watch_p95_s",
        "baseline_cold_hook_p50_s", "wake_p50_over_cold_hook",
        "idle_one_core_share", "idle_one_rss_mib", "idle_ten_core_share",
        "idle_ten_max_rss_mib"}
    assert 0 < figures["wake_p50_s"] < 1.0
    assert figures["idle_one_core_share"] <= 0.005  # the 0.5 % of a core
    assert figures["idle_ten_core_share"] <= 0.02
    assert figures["idle_one_rss_mib"] <= 40
