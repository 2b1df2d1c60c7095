"""The benchmark script and ``ssa bench``: a quick run prints one table of seven sections.

No timing assertions: the goals are printed by the script next to its ratios.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors import cli
from scripts import bench

SECTIONS = [1, 2, 3, 4, 5, 6, 7]


def test_a_quick_run_prints_one_table_with_the_seven_sections(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench.main(["--quick"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    title, header, *rows = out.splitlines()
    assert title.startswith("bench (quick): synchronous=FULL")
    assert header.split()[:3] == ["§", "ours", "value"]
    sections = [int(line.split()[0]) for line in rows]
    assert sorted(set(sections)) == SECTIONS
    assert sections == sorted(sections)  # one table, in section order
    assert "calls whose notice/wake was late" in out
    assert all(" MISSED" in line or " ok" in line for line in rows if ">=" in line or "<=" in line)


def test_ssa_bench_runs_the_checkout_script_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["bench", "--quick", "--json", "--dir", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "quick"
    assert sorted({r["section"] for r in report["rows"]}) == SECTIONS
    assert all(r["baseline"] is not None for r in report["rows"])
    assert list(tmp_path.iterdir()) == []  # the temporary databases are gone


def test_ssa_bench_outside_a_checkout_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli, "_bench_script", lambda: tmp_path / "scripts" / "bench.py")
    assert cli.main(["bench", "--quick"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("ssa: bench needs a source checkout")
    assert "python scripts/bench.py" in err
    assert err.count("\n") == 1
