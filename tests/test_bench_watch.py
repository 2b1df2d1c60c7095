"""The ``ssa watch`` benchmark (``scripts/bench_watch.py``): a quick run prints its table.

No timing assertions: the goals are judged by the script next to its ratios.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import bench_watch


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_quick_run_prints_both_sections_and_judges_every_goal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench_watch.main(["--quick", "--dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    title, header, *rows = out.splitlines()
    assert title.startswith("bench_watch (quick): ssa watch as a user feels it")
    assert header.split()[:3] == ["§", "ours", "value"]
    assert sorted({int(line.split()[0]) for line in rows}) == [1, 2]
    judged = [line for line in rows if line.endswith((" ok", " MISSED"))]
    assert len(judged) == 3  # idle CPU, typed-turn p95, new-session p50
    assert list(tmp_path.iterdir()) == []  # the temporary directory is gone
