"""The benchmark script (``python -m scripts.bench``): a quick run prints one table of eight
sections.

No timing assertions: the goals are printed by the script next to its ratios, and
``--check`` turns a missed goal into the exit status (tested on the pure decision and
its wiring, not on a timed run). The synchronous-peer baseline and the absolute goal are
checked for what they do. ``ssa`` has no ``bench`` command: benchmarks need a checkout.
"""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest

from actors.cli import app as cli
from scripts import bench, load_twenty

SECTIONS = [1, 2, 3, 4, 5, 6, 7, 8]


@pytest.mark.slow
def test_a_quick_run_prints_one_table_with_the_eight_sections(
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
    peer = [line for line in rows if "synchronous peer" in line]
    assert [line.split()[0] for line in peer] == ["1", "1", "3", "8"]
    assert peer[0].endswith((">= 1.5 ok", ">= 1.5 MISSED"))
    assert peer[1].endswith((">= 0.7 ok", ">= 0.7 MISSED"))
    assert peer[2].endswith(("<= 3 ms ok", "<= 3 ms MISSED"))
    naive = [line for line in rows if line.startswith("1 ") and "naive record_event" in line]
    assert len(naive) == 2
    assert not any(line.endswith(("ok", "MISSED")) for line in naive)  # ratio, no goal


@pytest.mark.slow
def test_a_quick_json_run_names_every_goal_and_leaves_no_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench.main(["--quick", "--json", "--dir", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "quick"
    assert sorted({r["section"] for r in report["rows"]}) == SECTIONS
    assert all(r["baseline"] is not None for r in report["rows"])
    goals = {(r["section"], r["figure"], r["baseline_figure"]): r["goal"] for r in report["rows"]}
    assert goals[(1, "events/s, Gateway, 8 threads", "synchronous peer, 8 threads, ev/s")] \
        == ">= 1.5"
    assert goals[(1, "events/s, Gateway, 1 thread", "synchronous peer, 1 thread, ev/s")] \
        == ">= 0.7"
    assert goals[(3, "producer call p99 ms, 8-thread load",
                  "synchronous peer call p99 ms, 8 threads")] == "<= 3 ms"
    assert goals[(1, "events/s, Gateway, 8 threads",
                  "naive record_event, 1 txn/event, ev/s")] is None
    assert list(tmp_path.iterdir()) == []  # the temporary databases are gone


def test_an_absolute_goal_bounds_our_value_whatever_the_ratio() -> None:
    met = bench.row(3, "p99 ms", 2.5, "peer p99 ms", 10.0, at_most_value=3.0, unit="ms")
    missed = bench.row(3, "p99 ms", 3.5, "peer p99 ms", 10.0, at_most_value=3.0, unit="ms")
    assert (met.goal, met.met, met.ratio) == ("<= 3 ms", True, 0.25)
    assert (missed.goal, missed.met, missed.ratio) == ("<= 3 ms", False, 0.35)
    lines = bench.table([met, missed]).splitlines()
    assert lines[1].endswith("<= 3 ms ok")
    assert lines[2].endswith("<= 3 ms MISSED")
    with pytest.raises(ValueError, match="at most one goal"):
        bench.row(3, "p99 ms", 2.5, "peer p99 ms", 10.0, at_least=1, at_most_value=3.0)


def test_the_synchronous_peer_records_durably_and_queues_one_waking_notice(
    tmp_path: Path,
) -> None:
    wakes = load_twenty.WakeCounter()
    path = tmp_path / "peer.sqlite"
    peer = bench.SyncPeer(path, wakes)
    watcher, target = bench.pair("peer", 0)
    try:
        assert peer.human_message(target) is None  # nobody watches yet: nothing stored
        peer.register([(watcher, target)])
        first, second = peer.human_message(target), peer.human_message(target)
        assert first is not None
        assert second is not None
        assert second.sequence > first.sequence
        assert wakes.counts == {watcher: 1}  # the repeat text is deduplicated: no second wake
        assert peer.drain(watcher) == [load_twenty.notice_text(target, 0)]
        assert peer.drain(watcher) == []
        # Not acknowledged: the durable notice is still open and covers the new
        # change, so the transaction opens nothing and nothing wakes.
        assert peer.human_message(target) is not None
        assert wakes.counts == {watcher: 1}
    finally:
        peer.close()
    conn = apsw.Connection(str(path))  # committed: visible from another connection
    try:
        assert conn.execute("SELECT count(*) FROM session_state_events").get == 3
        assert conn.execute("SELECT last_sequence FROM session_state_heads"
                            " WHERE session_key = ?", (target,)).get == 3
    finally:
        conn.close()


def test_ssa_has_no_bench_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["bench", "--quick"])
    assert info.value.code == 2  # argparse: an unknown command
    assert "invalid choice: 'bench'" in capsys.readouterr().err


def _rows(*met: bool | None) -> list[bench.Row]:
    """Rows whose goal was met (``True``), missed (``False``) or absent (``None``)."""
    return [bench.row(1, f"figure {i}", 2.0 if ok else 1.0, "baseline", 1.5, at_least=1.2)
            if ok is not None else bench.row(1, f"figure {i}", 1.0, "baseline", 1.5)
            for i, ok in enumerate(met)]


def test_check_fails_the_run_only_when_a_goal_was_missed() -> None:
    assert bench.missed_goals(_rows(True, None, False)) == [_rows(True, None, False)[2]]
    assert bench.exit_status(_rows(True, None), check=True) == 0
    assert bench.exit_status(_rows(True, False), check=True) == bench.GOAL_MISSED == 3
    assert bench.exit_status(_rows(True, False), check=False) == 0  # the default
    assert bench.exit_status(_rows(True), check=True, broken=True) == 1
    assert bench.exit_status(_rows(False), check=False, broken=True) == 1
    assert bench.describe_missed(_rows(False)[0]) == (
        "goal missed: section 1, figure 0 = 1 (baseline = 1.50, ratio 0.667); goal >= 1.2")


@pytest.mark.parametrize(("argv", "code"), [([], 0), (["--check"], 3)])
def test_check_is_wired_to_the_exit_status_and_names_the_missed_goal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    argv: list[str], code: int,
) -> None:
    monkeypatch.setattr(bench, "measure", lambda tmp, sizes: _rows(True, False))
    assert bench.main(["--quick", *argv]) == code
    out, err = capsys.readouterr()
    assert "figure 1" in out
    assert "MISSED" in out
    assert err == ("bench: goal missed: section 1, figure 1 = 1 (baseline = 1.50, "
                   "ratio 0.667); goal >= 1.2\n" if argv else "")
    monkeypatch.setattr(bench, "measure", lambda tmp, sizes: _rows(True, None))
    assert bench.main(["--quick", "--json", *argv]) == 0


def test_the_scan_benchmark_checks_its_ratio_goal() -> None:
    from scripts import bench_scan

    assert bench_scan.missed_goals({"claude": 1.3, "codex": 1.0}) == []
    assert bench_scan.missed_goals({"claude": 1.3, "pi": 0.8, "codex": float("nan")}) == [
        "goal missed: pi classify/json.loads ratio 0.80, goal >= 1",
        "goal missed: codex classify/json.loads ratio nan, goal >= 1"]
    assert bench_scan.parse_args(["--check"]).check is True
    assert bench_scan.parse_args([]).check is False
