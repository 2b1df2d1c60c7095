"""The scale benchmark (``scripts/bench_scale.py``): a quick run prints one table of five
sections and leaves nothing behind.

No timing assertions: the goals are printed by the script next to its ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import threading
from pathlib import Path

import pytest

from scripts import bench_scale

SECTIONS = [1, 2, 3, 4, 5]
GOAL = re.compile(r"  (<=|>=|=) [\d.,]+( [a-z]+)?( ok| MISSED)?$")
"""A row's goal column: the goal, then ``ok`` or ``MISSED`` (checked separately)."""


def _children() -> list[str]:
    """Child process ids of this process (Linux ``/proc``; empty elsewhere)."""
    out: list[str] = []
    for entry in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        try:
            out += entry.read_text().split()
        except OSError:
            continue
    return out


def _still_running(before: set[threading.Thread], timeout_s: float = 5.0) -> list[str]:
    """Threads started since ``before`` that do not end within ``timeout_s`` each (joined)."""
    left = []
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout_s)
        if thread.is_alive():
            left.append(thread.name)
    return left


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_quick_run_prints_every_section_and_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """``--quick``: sections 1-5 in one table, every goal judged, nothing left behind."""
    threads_before = set(threading.enumerate())
    children_before = _children()
    assert bench_scale.main(["--quick", "--dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    title, header, *rows = out.splitlines()
    assert title.startswith("bench_scale (quick): pay per change, not per session")
    assert header.split()[:3] == ["§", "ours", "value"]
    sections = [int(line.split()[0]) for line in rows]
    assert sorted(set(sections)) == SECTIONS
    assert sections == sorted(sections)  # one table, in section order
    goal_lines = [line for line in rows if GOAL.search(line)]
    assert {int(line.split()[0]) for line in goal_lines} == set(SECTIONS)
    assert all(line.endswith((" ok", " MISSED")) for line in goal_lines)
    assert "thread starts per idle scan" in out
    assert "detection p95 s" in out
    mix_rows = [line for line in rows if "detection p50, --interval" in line]
    assert len(mix_rows) == 2  # both intervals compared, never a goal on 3 appends
    assert not any(GOAL.search(line) for line in mix_rows)
    assert list(tmp_path.iterdir()) == []  # the homes and databases are gone
    assert _still_running(threads_before) == []
    assert _children() == children_before  # no ssa subprocess left behind


@pytest.mark.timeout(60)
def test_only_one_section_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--only 4 --json``: one JSON object holding only section 4's rows."""
    assert bench_scale.main(["--quick", "--only", "4", "--json", "--dir", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "quick"
    assert report["sections"] == [4]
    assert report["broken"] == []
    assert {r["section"] for r in report["rows"]} == {4}
    assert all(r["goal"] is None or r["met"] in (True, False) for r in report["rows"])
    assert list(tmp_path.iterdir()) == []


def test_sizes_choose_the_sections_sizes() -> None:
    """``--sizes`` parsing, and which N each section uses in each mode."""
    assert bench_scale.parse_sizes("2000, 5000") == (2000, 5000)
    with pytest.raises(argparse.ArgumentTypeError):
        bench_scale.parse_sizes("2000,lots")
    with pytest.raises(argparse.ArgumentTypeError):
        bench_scale.parse_sizes("0")
    full = bench_scale.sizes_for(False, None)
    assert full.scan_sizes == (2000, 5000, 20_000)
    assert (full.adopt_sessions, full.list_sessions, full.appends) == (5000, 20_000, 20)
    small = bench_scale.sizes_for(False, (2000,))
    assert (small.adopt_sessions, small.list_sessions) == (2000, 2000)
    quick = bench_scale.sizes_for(True, None)
    assert (quick.idle_scans, quick.appends, quick.list_sessions) == (2, 3, 2000)


@pytest.mark.parametrize(("argv", "broken", "code"), [
    ([], [], 0), (["--check"], [], 3), (["--check"], ["a notice never came"], 1),
    ([], ["a notice never came"], 1)])
def test_check_turns_a_missed_goal_into_the_exit_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    argv: list[str], broken: list[str], code: int,
) -> None:
    """The decision is :func:`scripts.bench.exit_status`; here only its wiring (no timed run)."""
    missed = bench_scale.row(5, "sessions_list() p50 ms", 80.0, "raw SELECT, ms", 10.0,
                             at_most_value=bench_scale.LIST_BOUND_MS, unit="ms")
    met = bench_scale.row(4, "most live threads", 12, "live threads before open", 3,
                          at_most_value=bench_scale.THREAD_BOUND)
    report = bench_scale.Report(rows=[met, missed], broken=list(broken))
    monkeypatch.setattr(bench_scale, "measure", lambda tmp, sizes, only: report)
    assert bench_scale.main(["--quick", *argv]) == code
    err = capsys.readouterr().err
    named = ("bench_scale: goal missed: section 5, sessions_list() p50 ms = 80 "
             "(raw SELECT, ms = 10, ratio 8); goal <= 50 ms\n")
    assert (named in err) == ("--check" in argv)
    assert "most live threads" not in err
    assert bench_scale.parse_args([]).check is False
