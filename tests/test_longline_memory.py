"""A 40 MiB line per JSONL source: classified, with the process's peak RSS bounded.

Each measurement runs in its own interpreter (``scripts/bench_longline.py
--child``), whose peak RSS comes from ``os.wait4``: the monitor's path
(``scan_upstream``) and ``ssa classify``'s. The figures with their baselines
(a whole-line decode, ijson) are in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINE_MIB = 40
PEAK_MIB = 400  # the goal for the whole process
GROWTH_MIB = 32  # what classifying the line may add to the process (measured: 4-13)


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_longline",
                                                  ROOT / "scripts" / "bench_longline.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("source", ["claude", "codex", "pi"])
def test_a_40_mib_typed_line_is_classified_with_bounded_memory(source: str,
                                                               tmp_path: Path) -> None:
    bench = _bench()
    path = tmp_path / f"{source}.jsonl"
    want = bench.write_transcript(source, path, LINE_MIB)
    assert path.stat().st_size > LINE_MIB << 20
    for mode in ("monitor", "classify"):
        result = bench.measure(mode, source, path)
        assert result["turns"] == want, (mode, result)  # before, the paste, after
        assert result["peak_mib"] < PEAK_MIB, (mode, result)
        assert result["peak_mib"] - result["base_mib"] < GROWTH_MIB, (mode, result)
