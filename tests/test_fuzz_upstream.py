"""Bad input from upstream sources (issue 5, item 5): the monitor on fuzzed transcripts.

Every case starts from a copy of a real fixture (``../shared/fixtures/upstream``,
copied into ``tmp_path``), adopts it, watches it, appends rows in the tool's
format (mutated: truncated lines, lines without a newline, invalid UTF-8, NUL
bytes, deeply nested JSON, 2 MiB lines against the 1 MiB scan cap, CRLF,
blank and non-object lines, random byte flips, line shuffles and
duplications) and calls ``scan_upstream()`` several times. Other cases
replace the transcript under the reader (a FIFO, a directory, a symlink loop,
a symlink to another file or to a device, a hole of NULs, truncation, rewrites
in place and by rename, concurrent growth and churn) or break an OpenCode
store (locked by another connection or process, corrupt, of an unknown
schema, gone).

For every case:

* nothing raises into the caller and every ``adopt``/``scan_upstream`` call
  returns within ``SCAN_BOUND_S`` (each runs in a thread joined with a
  timeout);
* the stored marker (``session_upstream_links.marker_json``, read with a
  separate connection) is exactly where an independent oracle says the
  classified bytes end: it never passes a line that was not classified (a
  Pi line that is not a JSON object, a partial last line), and lines longer
  than the cap are classified like any other;
* the recorded human turns (``turns`` payloads, 1 when absent, summed over
  ``human_direct_message`` events) equal the appended rows that
  ``line_classifier(source)`` counts up to that point (never double counted);
* long-line, missing, transient and unreadable cases are logged with the
  session key (the tests at the end pin down bugs this suite found and that
  were fixed: OpenCode stores that cannot be queried, and undecodable rows).

The random cases print their seed; set ``SSA_FUZZ_SEED`` to replay one and
``SSA_FUZZ_CASES`` for more cases per fixture.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import select
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import apsw
import pytest

from actors import Gateway, GatewayConfig, UpstreamLink
from actors.upstream.scan import line_classifier
from tests._upstream_rows import (
    claude_assistant,
    claude_user,
    codex_legacy_user,
    codex_paginated_user,
    pi_header,
    pi_user,
)
from tests.conftest import FIXTURES, WATCHER

T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent
OPENCODE_DB = FIXTURES / "opencode" / "opencode-1.18.33-generated.db"
OPENCODE_MAIN = "ses_dd45483e1ffey2Pb2WIeXKDqPz"
SEED = int(os.environ.get("SSA_FUZZ_SEED", "20261205"))
CASES_PER_FIXTURE = int(os.environ.get("SSA_FUZZ_CASES", "12"))
CAP = GatewayConfig().scan_cap_bytes
SCAN_BOUND_S = 30.0
"""Longest one adopt or scan_upstream call may take (the design bounds it by the
4 x ask_timeout_s monitor wait; a locked OpenCode store costs one 1 s busy wait)."""
PIPE_TIMEOUT_S = 20.0
MAX_SCANS = 12
SOURCE_DIRS = {"claude": "claude-code", "codex": "codex", "pi": "pi"}
# Transcripts the monitor links (the others are adopted without a link: Codex exec
# threads). pi-v1-compaction-bash-excerpt.jsonl is a v1 branch (branchedFrom) whose rows
# are copies, decided by the header's time, which the per-line count here does not model:
# tests/test_upstream_pi_versions.py reads it.
LINKED = {
    "claude": sorted(p.name for p in (FIXTURES / "claude-code").glob("*.jsonl")),
    "codex": ["codex-0.152.1-tui-paginated.jsonl",
              "codex-0.34.0-tui-kind-plain-excerpt.jsonl",
              "codex-0.57.0-tui-agentsmd-aborted-customprompt-excerpt.jsonl",
              "codex-0.34.0-env-context-only.jsonl"],
    "pi": ["pi-v3-openclaw-gateway-excerpt.jsonl", "pi-v3-print-redacted.jsonl",
           "pi-v1-header-mode-excerpt.jsonl"],
}
REFUSED = {"codex": ["codex-0.135.0-exec-legacy-redacted.jsonl"]}
MAIN_FIXTURE = {"claude": "cc-2.1.37-cli-prompt-tools-exit.jsonl",
                "codex": "codex-0.152.1-tui-paginated.jsonl",
                "pi": "pi-v3-print-redacted.jsonl"}
OTHER_FIXTURE = {"claude": "cc-2.1.17-cli-reject-interrupt-exit.jsonl",
                 "codex": "codex-0.57.0-tui-agentsmd-aborted-customprompt-excerpt.jsonl",
                 "pi": "pi-v3-openclaw-gateway-excerpt.jsonl"}


# --- rows ----------------------------------------------------------------------------


def typed_row(source: str, text: str, *, paginated: bool = True) -> bytes:
    """One turn a person typed, in ``source``'s format (Codex: two lines, one counts)."""
    if source == "claude":
        return claude_user(text)
    if source == "codex":
        return codex_paginated_user(text) if paginated else codex_legacy_user(text)
    return pi_user(text)


def other_row(source: str, text: str) -> bytes:
    """A row that is not a typed turn (an assistant reply)."""
    if source == "claude":
        return claude_assistant(text)
    if source == "codex":
        row: dict[str, Any] = {
            "timestamp": "2026-09-02T21:58:30.000Z", "type": "event_msg",
            "payload": {"type": "agent_message", "message": text}}
    else:
        row = {"type": "message", "id": "a1b2c3d4", "parentId": None,
               "timestamp": "2026-06-05T05:24:30.000Z",
               "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}
    return json.dumps(row).encode() + b"\n"


def sized_typed_row(source: str, length: int) -> bytes:
    """A typed row whose line is exactly ``length`` bytes without its newline."""
    def build(n: int) -> bytes:
        row = typed_row(source, "x" * n, paginated=False)
        return row.rstrip(b"\n").split(b"\n")[-1] + b"\n"  # Codex: the counting event line
    n = max(1, length - len(build(1)) + 2)
    row = build(n)
    row = build(n + length - (len(row) - 1))
    assert len(row) - 1 == length
    return row


def nested_row(depth: int) -> bytes:
    """A user row whose content is ``depth`` nested arrays (valid JSON, pathological)."""
    return (b'{"type":"user","message":{"role":"user","content":' + b"[" * depth
            + b"]" * depth + b"}}\n")


# --- the oracle ----------------------------------------------------------------------


def oracle(source: str, data: bytes) -> tuple[int, int, str]:
    """What scanning ``data`` (the bytes after the marker) must give, independently.

    Returns ``(turns, bytes the marker may pass, why it stops)``: complete lines
    only, of any length (the whole line is classified in memory here, the
    monitor reads it in cap-sized pieces); a unit with ``stop`` (Pi, not a
    JSON object) holds it before that line.
    """
    classify = line_classifier(source)
    pos = turns = 0
    while True:
        newline = data.find(b"\n", pos)
        if newline < 0:
            return turns, pos, "partial" if pos < len(data) else "end"
        line = data[pos:newline]
        if line.strip():
            unit = classify(line)
            if unit.stop:
                return turns, pos, "stop"
            turns += unit.human
        pos = newline + 1


def classified_turns(source: str, rows: bytes) -> int:
    """Rows among ``rows`` (complete lines) the source's classifier counts as typed."""
    classify = line_classifier(source)
    return sum(classify(line).human for line in rows.split(b"\n")[:-1] if line.strip())


# --- the harness ---------------------------------------------------------------------


def bounded(call: Callable[[], T], what: str, timeout: float = SCAN_BOUND_S) -> tuple[T, float]:
    """Run ``call`` in a thread; fail if it raises or does not return within ``timeout``."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # reported to the test below
            box["error"] = exc

    thread = threading.Thread(target=run, name=f"fuzz-call-{what[:40]}", daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(timeout)
    elapsed = time.monotonic() - started
    assert not thread.is_alive(), f"{what} did not return within {timeout:.0f}s"
    if "error" in box:
        raise AssertionError(f"{what} raised into the caller: {box['error']!r}") from box["error"]
    return box["value"], elapsed


@dataclass
class Track:
    """One linked case: where its marker started and what it must have counted."""

    key: str
    source: str
    path: Path
    start: int
    label: str
    counted_before: int = 0
    """Turns counted before ``start`` (earlier epochs of a re-baselined transcript)."""
    since: int = 0
    """The log position when its faults could begin (see :meth:`Harness.logged`)."""
    long_line: bool = False
    """A line longer than the cap was appended (it must be logged, once)."""

    def expected(self) -> tuple[int, int, str]:
        turns, consumed, why = oracle(self.source, self.path.read_bytes()[self.start:])
        return self.counted_before + turns, self.start + consumed, why


@dataclass
class Harness:
    """A gateway plus the checks every case shares."""

    gw: Gateway
    db: Path
    caplog: pytest.LogCaptureFixture
    serial: Iterator[int] = field(default_factory=lambda: iter(range(1, 100_000)))
    calls: int = 0
    slowest: float = 0.0
    tried: Counter[str] = field(default_factory=Counter)
    raced: int = 0
    """Rows a writer thread appended while scans ran."""

    def key(self, tag: str) -> str:
        return f"agent:main:fz:{tag}{next(self.serial):04d}"

    def call(self, fn: Callable[[], T], what: str) -> T:
        value, elapsed = bounded(fn, what)
        self.calls += 1
        self.slowest = max(self.slowest, elapsed)
        return value

    def adopt(self, key: str, source: str, path: Path, **kwargs: Any) -> UpstreamLink | None:
        link = self.call(lambda: self.gw.adopt(key, source=source, path=path, **kwargs),
                         f"adopt {key}")
        assert self.call(lambda: self.gw.watch(WATCHER, key), f"watch {key}")
        return link

    def track(self, key: str, source: str, path: Path, label: str) -> Track:
        link = self.adopt(key, source, path)
        assert link is not None, f"{label}: {path.name} was not linked"
        self.tried[label] += 1
        return Track(key, source, path, int(link.marker["offset"]), label)

    def scan(self) -> list[Any]:
        return self.call(self.gw.scan_upstream, "scan_upstream")

    def markers(self) -> dict[str, str]:
        conn = apsw.Connection(str(self.db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return {str(k): str(m) for k, m in conn.execute(
                "SELECT session_key, marker_json FROM session_upstream_links")}
        finally:
            conn.close()

    def settle(self, at_least: int = 1) -> int:
        """Scan until no marker moves (at least ``at_least`` scans); returns the scans run."""
        before = self.markers()
        for n in range(1, MAX_SCANS + 1):
            self.scan()
            after = self.markers()
            if n >= at_least and after == before:
                return n
            before = after
        pytest.fail(f"markers still moving after {MAX_SCANS} scans")

    def marker(self, key: str) -> dict[str, Any] | None:
        raw = self.markers().get(key)
        return None if raw is None else dict(json.loads(raw))

    def turns(self, key: str) -> int:
        conn = apsw.Connection(str(self.db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            payloads = [p for (p,) in conn.execute(
                "SELECT payload_json FROM session_state_events WHERE session_key = ?"
                " AND kind = 'human_direct_message'", (key,))]
        finally:
            conn.close()
        return sum(1 if p is None else int(json.loads(p).get("turns", 1)) for p in payloads)

    def kinds(self, key: str) -> list[str]:
        conn = apsw.Connection(str(self.db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return [str(k) for (k,) in conn.execute(
                "SELECT kind FROM session_state_events WHERE session_key = ? ORDER BY sequence",
                (key,))]
        finally:
            conn.close()

    def mark(self) -> int:
        """Where the log stands now (pass it to :meth:`logged` as ``since``)."""
        return len(self.caplog.records)

    def logged(self, key: str, *, since: int) -> list[str]:
        """Log lines since ``since`` that name ``key`` (as a whole key)."""
        named = re.compile(re.escape(key) + r"(?![\w-])")
        return [r.getMessage() for r in self.caplog.records[since:]
                if named.search(r.getMessage())]

    def check(self, track: Track) -> None:
        """The marker is where the classified bytes end; the turns are the oracle's.

        A line longer than the cap must have been logged with the key since
        ``track.since``.
        """
        turns, end, why = track.expected()
        marker = self.marker(track.key)
        where = f"{track.label} ({track.key}, {track.path.name}, stops: {why})"
        assert marker is not None, f"{where}: the link was dropped"
        assert marker["offset"] == end, (
            f"{where}: the marker is at {marker['offset']}, the classified bytes end at {end}")
        assert self.turns(track.key) == turns, (
            f"{where}: {self.turns(track.key)} turns recorded, {turns} typed rows counted")
        if track.long_line:
            assert self.logged(track.key, since=track.since), (
                f"{where}: a line longer than the cap, but no log line names the key")

    def no_faults_logged(self) -> None:
        """No classifier raised, no monitor failed, nothing at ERROR."""
        bad = [r.getMessage() for r in self.caplog.records
               if r.levelno >= logging.ERROR or "classifier raised" in r.getMessage()
               or ("upstream scan of" in r.getMessage() and " failed:" in r.getMessage())]
        assert not bad, f"faults logged: {bad[:5]}"


@pytest.fixture
def harness(open_gateway: Callable[..., Gateway], db_path: Path,
            caplog: pytest.LogCaptureFixture) -> Harness:
    caplog.set_level(logging.INFO)
    return Harness(open_gateway(), db_path, caplog)


def copy_fixture(source: str, name: str, target_dir: Path, as_name: str | None = None) -> Path:
    """A private copy of a real transcript, ending with the newline its writer put there."""
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / (as_name or name)
    shutil.copyfile(FIXTURES / SOURCE_DIRS[source] / name, target)
    data = target.read_bytes()
    if data and not data.endswith(b"\n"):
        append(target, b"\n")
    return target


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


# --- random mutations ----------------------------------------------------------------

INVALID_UTF8 = (b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80\x80",
                b"\xe2\x82")
NOT_OBJECTS = (b"[]", b'"a string"', b"123", b"null", b"true", b"{", b"}", b"[{}]", b"NaN",
               b'{"type": "user", "message": {"role": "user", "content": "x"}} trailing')


def _random_line_index(rng: random.Random, lines: list[bytes]) -> int:
    return rng.randrange(len(lines)) if lines else 0


def mutate(rng: random.Random, source: str, lines: list[bytes]) -> tuple[bytes, list[str]]:
    """Apply 1-3 random mutations to ``lines`` (no newlines inside); returns the bytes."""
    applied: list[str] = []
    ops = ["shuffle", "duplicate", "truncate_line", "join", "invalid_utf8", "nul", "nested",
           "long_line", "cap_edge", "crlf", "blank", "not_object", "flip", "no_final_newline"]
    weights = [3, 3, 3, 3, 3, 3, 1, 2, 1, 2, 2, 2, 3, 2]
    for op in rng.choices(ops, weights, k=rng.randint(1, 3)):
        applied.append(op)
        i = _random_line_index(rng, lines)
        if op == "shuffle":
            rng.shuffle(lines)
        elif op == "duplicate":
            for _ in range(rng.randint(1, 4)):
                lines.insert(_random_line_index(rng, lines), lines[i])
        elif op == "truncate_line" and lines:
            lines[i] = lines[i][: rng.randrange(max(1, len(lines[i])))]
        elif op == "join" and len(lines) > 1:
            j = min(i, len(lines) - 2)
            lines[j: j + 2] = [lines[j][: rng.randrange(max(1, len(lines[j])))] + lines[j + 1]]
        elif op in ("invalid_utf8", "nul") and lines:
            junk = rng.choice(INVALID_UTF8) if op == "invalid_utf8" else b"\x00" * rng.randint(1, 3)
            at = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:at] + junk + lines[i][at:]
            if rng.random() < 0.3:
                lines.insert(i, junk * 8)
        elif op == "nested":
            lines.insert(i, nested_row(rng.choice((1_000, 20_000, 200_000))).rstrip(b"\n"))
        elif op == "long_line":
            size = rng.choice((2 << 20, CAP + 1))
            text = "y" * size
            lines.insert(i, typed_row(source, text, paginated=False).split(b"\n")[-2])
        elif op == "cap_edge":
            length = rng.choice((CAP - 1, CAP))
            lines.insert(i, sized_typed_row(source, length).rstrip(b"\n"))
        elif op == "crlf":
            for k in rng.sample(range(len(lines)), min(len(lines), 3)):
                lines[k] += b"\r"
        elif op == "blank":
            lines.insert(i, rng.choice((b"", b"   ", b"\t", b"\r", b" \x0b\x0c ")))
        elif op == "not_object":
            lines.insert(i, rng.choice(NOT_OBJECTS))
    data = b"".join(line + b"\n" for line in lines)
    if "flip" in applied and data:
        buffer = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            buffer[rng.randrange(len(buffer))] ^= rng.randint(1, 255)
        data = bytes(buffer)
    if "no_final_newline" in applied:
        data = data.rstrip(b"\n")
    return data, applied


def fuzz_block(rng: random.Random, source: str, fixture: str, serial: int) -> list[bytes]:
    """Real rows of the fixture plus fresh typed rows, as lines without newlines."""
    real = (FIXTURES / SOURCE_DIRS[source] / fixture).read_bytes().split(b"\n")
    real = [line for line in real if line.strip()]
    rows = b"".join(typed_row(source, f"fuzz turn {serial}-{n}", paginated="paginated" in fixture)
                    for n in range(rng.randint(2, 6)))
    rows += b"".join(other_row(source, f"reply {serial}-{n}") for n in range(rng.randint(0, 3)))
    lines = rows.rstrip(b"\n").split(b"\n")
    lines += rng.sample(real, min(len(real), rng.randint(1, 8)))
    rng.shuffle(lines)
    return lines


def test_fuzzed_and_mutated_transcripts_of_every_tool(harness: Harness, tmp_path: Path) -> None:
    """Random mutations of real transcripts, appended in random pieces between scans."""
    rng = random.Random(SEED)
    print(f"\nfuzz seed {SEED} (SSA_FUZZ_SEED), {CASES_PER_FIXTURE} cases per fixture")
    tracks: list[tuple[Track, bytes, list[str]]] = []
    mutations: Counter[str] = Counter()
    stops: Counter[str] = Counter()
    for source, fixtures in LINKED.items():
        for fixture in fixtures:
            for n in range(CASES_PER_FIXTURE):
                key = harness.key(source[:2])
                path = copy_fixture(source, fixture, tmp_path / key.rsplit(":", 1)[1])
                track = harness.track(key, source, path, f"mutated {source}")
                block, applied = mutate(rng, source, fuzz_block(rng, source, fixture, n))
                mutations.update(applied)
                tracks.append((track, block, applied))
    harness.scan()
    for track, _, _ in tracks:
        track.since = harness.mark()
    # Deliver every block in up to three pieces cut at random bytes, scanning in between.
    cuts = {t.key: sorted(rng.sample(range(len(b) + 1), min(len(b) + 1, 2)))
            for t, b, _ in tracks}
    for piece in range(3):
        for track, block, _ in tracks:
            bounds = [0, *cuts[track.key], len(block)]
            append(track.path, block[bounds[piece]: bounds[piece + 1]])
        harness.scan()
    harness.settle()
    for track, _, applied in tracks:
        stops[track.expected()[2]] += 1
        try:
            harness.check(track)
        except AssertionError as exc:
            raise AssertionError(f"seed {SEED}, mutations {applied}: {exc}") from None
    # Refused transcripts: adopted without a link; appending and scanning change nothing.
    for source, fixtures in REFUSED.items():
        for fixture in fixtures:
            key = harness.key("rf")
            path = copy_fixture(source, fixture, tmp_path / key.rsplit(":", 1)[1])
            assert harness.adopt(key, source, path) is None
            append(path, typed_row(source, "typed into a refused transcript", paginated=False))
            harness.settle()
            assert harness.marker(key) is None
            assert harness.turns(key) == 0
            assert harness.kinds(key) == ["adopted"]
            harness.tried["refused transcript"] += 1
    harness.no_faults_logged()
    print(f"fuzz: {len(tracks)} mutated transcripts + {harness.tried['refused transcript']} "
          f"refused ones; mutations {dict(sorted(mutations.items()))}; "
          f"marker stops {dict(stops)}; {harness.calls} bounded calls, slowest "
          f"{harness.slowest:.2f}s")


# --- the transcript replaced or rewritten under the reader --------------------------------


def fifo_symlink(path: Path) -> None:
    """Make ``path`` a symlink to a new FIFO beside it."""
    fifo = path.with_suffix(".fifo")
    os.mkfifo(fifo)
    path.symlink_to(fifo)


class Replacements:
    """Deterministic cases that change the transcript file itself between scans."""

    def __init__(self, h: Harness, tmp: Path, source: str) -> None:
        self.h = h
        self.tmp = tmp
        self.source = source
        self.n = 0

    def fresh(self, label: str) -> Track:
        key = self.h.key(self.source[:2])
        path = copy_fixture(self.source, MAIN_FIXTURE[self.source],
                            self.tmp / key.rsplit(":", 1)[1], "transcript.jsonl")
        track = self.h.track(key, self.source, path, f"{self.source} {label}")
        self.h.settle()
        track.since = self.h.mark()
        return track

    def typed(self, count: int = 1) -> bytes:
        rows = b""
        for _ in range(count):
            self.n += 1
            rows += typed_row(self.source, f"replacement turn {self.n}")
        return rows

    def gone(self, label: str, replace: Callable[[Path], None]) -> None:
        """The path stops being a regular file: three missing scans, one upstream_missing,
        the link kept marked missing (issue 34 item 2)."""
        track = self.fresh(label)
        append(track.path, self.typed(2))
        self.h.settle()
        self.h.check(track)
        counted = self.h.turns(track.key)
        since = self.h.mark()
        track.path.unlink()
        replace(track.path)
        self.h.settle(at_least=4)
        marker = self.h.marker(track.key)
        assert marker is not None, f"{label}: the link was dropped"
        assert "missing" in marker, f"{label}: not marked missing"
        assert self.h.kinds(track.key).count("upstream_missing") == 1, label
        assert self.h.turns(track.key) == counted
        assert self.h.logged(track.key, since=since), f"{label}: not logged with the key"

    def run_all(self) -> None:
        h, src = self.h, self.source
        self.gone("replaced by a FIFO", os.mkfifo)
        self.gone("replaced by a directory", os.mkdir)
        self.gone("deleted", lambda _path: None)
        self.gone("replaced by a symlink to a FIFO", fifo_symlink)
        self.gone("replaced by a symlink to /dev/null", lambda p: p.symlink_to("/dev/null"))
        self.gone("replaced by a dangling symlink", lambda p: p.symlink_to(p.with_suffix(".none")))

        # A symlink loop proves nothing: transient, the link stays, the marker holds.
        track = self.fresh("symlink loop")
        aside = track.path.with_suffix(".aside")
        track.path.rename(aside)
        loop = track.path.with_suffix(".loop")
        track.path.symlink_to(loop)
        loop.symlink_to(track.path)
        h.settle(at_least=4)
        assert h.kinds(track.key).count("upstream_missing") == 0
        assert h.logged(track.key, since=track.since), "a symlink loop is not logged with the key"
        before = h.marker(track.key)
        track.path.unlink()
        loop.unlink()
        aside.rename(track.path)  # the same inode comes back: the marker is still valid
        assert h.marker(track.key) == before
        append(track.path, self.typed(2))
        h.settle()
        h.check(track)

        # A symlink to another transcript: another inode, re-baselined at its end.
        track = self.fresh("symlink to another file")
        append(track.path, self.typed(1))
        h.settle()
        counted = h.turns(track.key)
        other = copy_fixture(src, OTHER_FIXTURE[src], track.path.parent, "other.jsonl")
        track.path.unlink()
        track.path.symlink_to(other)
        h.settle()
        track.start, track.counted_before = other.stat().st_size, counted
        append(other, self.typed(3))
        h.settle()
        h.check(track)

        # A hole of NULs (a sparse extension) is one long line that is not JSON:
        # passed over (Pi too, since issue 25 item 13), logged.
        track = self.fresh("extended by a 3 MiB hole")
        append(track.path, self.typed(1))
        os.truncate(track.path, track.path.stat().st_size + (3 << 20))
        append(track.path, self.typed(2))
        track.long_line = True
        h.settle()
        h.check(track)
        assert track.expected()[2] == "end"

        # Truncated below the marker: re-baselined; later turns count.
        track = self.fresh("truncated under the reader")
        last = self.typed(1)
        append(track.path, self.typed(1) + last)
        h.settle()
        counted = h.turns(track.key)
        size = track.path.stat().st_size
        os.truncate(track.path, size - len(last))  # the writer took its last row back
        h.settle()
        track.start, track.counted_before = size - len(last), counted
        append(track.path, self.typed(2))
        h.settle()
        h.check(track)

        # Rewritten by rename (another inode): re-baselined without counting what it held.
        track = self.fresh("rewritten by rename")
        append(track.path, self.typed(1))
        h.settle()
        counted = h.turns(track.key)
        new = track.path.with_suffix(".new")
        new.write_bytes(track.path.read_bytes() + self.typed(1))
        os.replace(new, track.path)
        h.settle()
        track.start, track.counted_before = track.path.stat().st_size, counted
        append(track.path, self.typed(2))
        h.settle()
        h.check(track)

        # Rewritten in place with the same prefix (an editor saving): only the growth counts.
        track = self.fresh("rewritten in place, same prefix")
        old = track.path.read_bytes()
        with track.path.open("r+b") as handle:
            handle.write(old + self.typed(2))
        h.settle()
        h.check(track)

        # Rewritten in place with other, longer content (same inode): the bytes before the
        # marker changed, so it is re-baselined at the end of its complete lines without
        # counting what it holds; turns typed afterwards count.
        track = self.fresh("rewritten in place, other content")
        append(track.path, self.typed(1))
        h.settle()
        counted = h.turns(track.key)
        other_bytes = (FIXTURES / SOURCE_DIRS[src] / OTHER_FIXTURE[src]).read_bytes()
        with track.path.open("r+b") as handle:
            handle.truncate(0)
            handle.write(other_bytes.rstrip(b"\n") + b"\n" + self.typed(2)
                         + b"x" * track.path.stat().st_size + b"\n" + self.typed(1))
        h.settle()
        size = track.path.stat().st_size
        marker = h.marker(track.key)
        assert marker is not None
        assert marker["offset"] == size, "a rewrite in place was not re-baselined at its end"
        assert h.turns(track.key) == counted, "the rewritten content was counted"
        track.start, track.counted_before = size, counted
        append(track.path, self.typed(2))
        h.settle()
        h.check(track)

        # A typed row without its newline is left until the newline lands, then counted once.
        track = self.fresh("typed row without a newline")
        row = self.typed(1)
        append(track.path, row[:-1])
        h.settle()
        h.check(track)  # the marker stays before the unfinished line
        assert h.turns(track.key) == 0
        assert track.expected()[2] == "partial"
        append(track.path, b"\n")
        h.settle()
        h.check(track)
        assert h.turns(track.key) == classified_turns(src, row)

        # Exactly at the cap: a line of cap-1 bytes is read whole, one of cap bytes in pieces.
        track = self.fresh("lines at the cap")
        append(track.path, self.typed(1) + sized_typed_row(src, CAP - 1) + self.typed(1)
               + sized_typed_row(src, CAP) + self.typed(1))
        h.settle()
        h.check(track)
        assert h.turns(track.key) == 5, "a line at the cap was not read"

        # 2 MiB typed line between typed rows: all five count, over several scans.
        track = self.fresh("2 MiB line")
        append(track.path, self.typed(2) + typed_row(src, "z" * (2 << 20), paginated=False)
               + self.typed(2))
        track.long_line = True
        h.settle()
        h.check(track)
        assert track.expected()[2] == "end"

        if src == "pi":
            track = self.fresh("invalid line")
            append(track.path, self.typed(1) + b'{"type": "message", "mess\n' + self.typed(2))
            h.settle()
            h.check(track)
            assert track.expected()[2] == "end"  # read past (issue 25 item 13)
            assert h.turns(track.key) == 3

        self.grows_while_scanned()
        self.churn()

    def grows_while_scanned(self) -> None:
        """A writer appends rows in two writes each (partial lines) while 20 scans run."""
        track = self.fresh("growing while scanned")
        written: list[bytes] = []
        stop = threading.Event()

        def writer() -> None:
            with track.path.open("ab", buffering=0) as handle:
                while not stop.is_set() and len(written) < 20_000:
                    row = self.typed(1)
                    handle.write(row[: len(row) // 2])
                    handle.write(row[len(row) // 2:])
                    written.append(row)

        self.race(writer, stop)
        self.h.check(track)
        assert self.h.turns(track.key) == classified_turns(self.source, b"".join(written))
        self.h.raced += len(written)

    def churn(self) -> None:
        """A writer truncates and appends while 20 scans run: never more turns than typed."""
        track = self.fresh("truncated and regrown while scanned")
        rng = random.Random(SEED + 1)
        written = [0]
        stop = threading.Event()

        def writer() -> None:
            while not stop.is_set() and written[0] < 20_000:
                if rng.random() < 0.1:
                    os.truncate(track.path, rng.randrange(track.path.stat().st_size + 1))
                rows = self.typed(rng.randint(1, 3))
                written[0] += classified_turns(self.source, rows)
                append(track.path, rows)

        self.race(writer, stop)
        marker = self.h.marker(track.key)
        assert marker is not None
        assert marker["offset"] <= track.path.stat().st_size
        assert self.h.turns(track.key) <= written[0], "more turns recorded than rows typed"

    def race(self, writer: Callable[[], None], stop: threading.Event) -> None:
        """Run ``writer`` in a thread during 20 scans, stop it, then settle."""
        thread = threading.Thread(target=writer, name="fuzz-writer")
        thread.start()
        try:
            for _ in range(20):
                self.h.scan()
        finally:
            stop.set()
            thread.join(PIPE_TIMEOUT_S)
        assert not thread.is_alive(), "the writer did not stop"
        self.h.settle()


@pytest.mark.parametrize("source", ["claude", "codex", "pi"])
def test_transcripts_replaced_or_rewritten_under_the_reader(
    harness: Harness, tmp_path: Path, source: str,
) -> None:
    Replacements(harness, tmp_path, source).run_all()
    # Adopting what is not a transcript: None, logged with the key, nothing recorded.
    fifo = tmp_path / "adopt.fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "adopt.loop"
    loop.symlink_to(loop)
    directory = tmp_path / "adopt.dir"
    directory.mkdir()
    for label, path in (("a FIFO", fifo), ("a symlink loop", loop), ("a directory", directory),
                        ("a missing file", tmp_path / "nothing.jsonl"),
                        ("/dev/null", Path("/dev/null"))):
        key = harness.key("ad")
        since = harness.mark()
        assert harness.adopt(key, source, path) is None, label
        assert harness.kinds(key) == [], label
        assert harness.logged(key, since=since), f"adopting {label} is not logged with the key"
        harness.tried[f"adopt {label}"] += 1
    harness.scan()
    harness.no_faults_logged()
    print(f"{source}: {sum(harness.tried.values())} cases under the reader "
          f"({', '.join(sorted(harness.tried))}); {harness.raced} rows appended during "
          f"scans; {harness.calls} bounded calls, slowest {harness.slowest:.2f}s")


# --- OpenCode stores -------------------------------------------------------------------


def opencode_turn(conn: apsw.Connection, session_id: str, text: str, n: int) -> str:
    """Insert a typed user turn as OpenCode 1.18 writes one (message, part, sequence + 3).

    The caller owns the transaction. Returns the message id.
    """
    created = int(conn.execute("SELECT max(time_created) FROM message").get) + 60_000
    message_id = f"msg_{(created * 0x1000 + 1) % (1 << 48):012x}fz{n:012d}"
    part_id = f"prt_{(created * 0x1000 + 2) % (1 << 48):012x}fz{n:012d}"
    data = {"role": "user", "time": {"created": created}, "agent": "build",
            "model": {"providerID": "mock", "modelID": "mock-model"}, "summary": {"diffs": []}}
    conn.execute("INSERT INTO message (id, session_id, time_created, time_updated, data)"
                 " VALUES (?, ?, ?, ?, ?)",
                 (message_id, session_id, created, created, json.dumps(data)))
    conn.execute("INSERT INTO part (id, message_id, session_id, time_created, time_updated,"
                 " data) VALUES (?, ?, ?, ?, ?, ?)",
                 (part_id, message_id, session_id, created, created,
                  json.dumps({"type": "text", "text": text})))
    conn.execute("UPDATE event_sequence SET seq = seq + 3 WHERE aggregate_id = ?", (session_id,))
    return message_id


def opencode_seq(path: Path) -> int:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute("SELECT seq FROM event_sequence WHERE aggregate_id = ?",
                                (OPENCODE_MAIN,)).get)
    finally:
        conn.close()


@dataclass
class OpenCodeCase:
    h: Harness
    key: str
    db: Path
    label: str
    typed: int = 0

    def turn(self, conn: apsw.Connection | None = None) -> str:
        """Type one turn (in ``conn``'s open transaction, or committed on its own)."""
        self.typed += 1
        text = f"{self.label} {self.typed}"
        if conn is not None:
            return opencode_turn(conn, OPENCODE_MAIN, text, self.typed)
        own = apsw.Connection(str(self.db))
        try:
            own.set_busy_timeout(5000)
            with own:
                return opencode_turn(own, OPENCODE_MAIN, text, self.typed)
        finally:
            own.close()

    def check(self, *, turns: int | None = None, logged_since: int | None = None) -> None:
        expected = self.typed if turns is None else turns
        assert self.h.turns(self.key) == expected, (
            f"opencode {self.label}: {self.h.turns(self.key)} turns recorded, {expected} typed")
        if logged_since is not None:
            assert self.h.logged(self.key, since=logged_since), (
                f"opencode {self.label}: no log line names the key")


def new_opencode(h: Harness, tmp: Path, label: str, *, wal: bool = False) -> OpenCodeCase:
    key = h.key("oc")
    db = tmp / key.rsplit(":", 1)[1] / "opencode.db"
    db.parent.mkdir(parents=True)
    shutil.copyfile(OPENCODE_DB, db)
    if wal:
        conn = apsw.Connection(str(db))
        conn.execute("PRAGMA journal_mode = WAL")
        conn.close()
    link = h.adopt(key, "opencode", db, thread_id=OPENCODE_MAIN)
    assert link is not None, label
    h.settle()
    h.tried[f"opencode {label}"] += 1
    return OpenCodeCase(h, key, db, label)


LOCKER = r"""
import select, sys, apsw
conn = apsw.Connection(sys.argv[1])
conn.set_busy_timeout(5000)
conn.execute("BEGIN EXCLUSIVE")
created = int(conn.execute("SELECT max(time_created) FROM message").get) + 60_000
mid = "msg_%012xfz%012d" % ((created * 0x1000 + 1) % (1 << 48), 77)
conn.execute("INSERT INTO message (id, session_id, time_created, time_updated, data)"
             " VALUES (?, ?, ?, ?, ?)", (mid, sys.argv[2], created, created,
             '{"role": "user", "time": {"created": %d}, "agent": "build"}' % created))
conn.execute("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)"
             " VALUES (?, ?, ?, ?, ?, ?)", ("prt_" + mid[4:], mid, sys.argv[2], created,
             created, '{"type": "text", "text": "typed while locked by another process"}'))
conn.execute("UPDATE event_sequence SET seq = seq + 3 WHERE aggregate_id = ?", (sys.argv[2],))
print("locked", flush=True)
ready, _, _ = select.select([sys.stdin], [], [], float(sys.argv[3]))
conn.execute("COMMIT" if ready else "ROLLBACK")
print("released", flush=True)
"""


def read_line(proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    """One line from the child's stdout, waiting at most ``timeout`` seconds."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f"the child said nothing within {timeout}s"
    return proc.stdout.readline()


@pytest.mark.timeout(120)
def test_opencode_stores_locked_corrupt_of_unknown_schema_or_gone(
    harness: Harness, tmp_path: Path,
) -> None:
    h = harness
    rng = random.Random(SEED + 2)

    # Locked by another connection (rollback journal: readers wait, then give up).
    case = new_opencode(h, tmp_path, "locked by another connection")
    locker = apsw.Connection(str(case.db))
    try:
        locker.execute("BEGIN EXCLUSIVE")
        case.turn(locker)
        h.scan()
        h.scan()
        assert h.turns(case.key) == 0
        locker.execute("COMMIT")
    finally:
        locker.close()
    h.settle()
    case.check()
    assert h.marker(case.key) is not None
    assert h.marker(case.key)["seq"] == opencode_seq(case.db)  # type: ignore[index]

    # Locked by another process holding BEGIN EXCLUSIVE with an uncommitted turn.
    case = new_opencode(h, tmp_path, "locked by another process")
    proc = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(case.db), OPENCODE_MAIN, str(PIPE_TIMEOUT_S)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert read_line(proc, PIPE_TIMEOUT_S) == b"locked\n"
        h.scan()
        h.scan()
        assert h.turns(case.key) == 0
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        assert read_line(proc, PIPE_TIMEOUT_S) == b"released\n"
        assert proc.wait(timeout=PIPE_TIMEOUT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=PIPE_TIMEOUT_S)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
    case.typed = 1
    h.settle()
    case.check()

    # WAL with an exclusive-locking-mode writer: readers cannot even start.
    case = new_opencode(h, tmp_path, "WAL held in exclusive locking mode", wal=True)
    locker = apsw.Connection(str(case.db))
    try:
        locker.execute("PRAGMA locking_mode = EXCLUSIVE")
        with locker:
            case.turn(locker)
        h.scan()
        h.scan()
    finally:
        locker.close()
    h.settle()
    case.check()

    # Corrupt pages (not the header): whatever still reads is counted at most once.
    for attempt in range(3):
        case = new_opencode(h, tmp_path, f"corrupt pages {attempt}")
        case.turn()
        page = 4096
        size = case.db.stat().st_size
        with case.db.open("r+b") as handle:
            for index in rng.sample(range(1, size // page), min(6, size // page - 1)):
                handle.seek(index * page + rng.randrange(page - 64))
                handle.write(rng.randbytes(64))
        h.settle(at_least=3)
        assert h.turns(case.key) <= 1, "a corrupt store counted a turn twice"
        try:
            case.turn()
        except apsw.Error:  # too corrupt to write to: the writer failed, nothing typed
            case.typed -= 1
        h.settle()
        assert h.turns(case.key) <= case.typed, "a corrupt store counted a turn twice"

    # Corrupt header, truncated file, replaced by a non-database, unknown schemas: no news.
    def corrupt_header(db: Path) -> None:
        with db.open("r+b") as handle:
            handle.write(b"this is not sqlite" * 5)

    def truncated(db: Path) -> None:
        os.truncate(db, db.stat().st_size // 3)

    def not_a_database(db: Path) -> None:
        db.write_bytes(b'{"not": "a database"}\n' * 100)

    def unknown_schema(db: Path) -> None:
        db.unlink()
        conn = apsw.Connection(str(db))
        conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, data BLOB)")
        conn.close()

    def text_sequence(db: Path) -> None:
        conn = apsw.Connection(str(db))
        conn.execute("UPDATE event_sequence SET seq = 'forty-two' WHERE aggregate_id = ?",
                     (OPENCODE_MAIN,))
        conn.close()

    breakers: list[tuple[str, Callable[[Path], None]]] = [
        ("corrupt header", corrupt_header), ("truncated to a third", truncated),
        ("not a database", not_a_database), ("unknown schema", unknown_schema),
        ("text event sequence", text_sequence)]
    for label, breaker in breakers:
        case = new_opencode(h, tmp_path, label)
        case.turn()
        breaker(case.db)
        h.settle(at_least=4)
        case.check(turns=0)
        assert "upstream_missing" not in h.kinds(case.key), f"{label} proved nothing"
        assert h.marker(case.key) is not None

    # The message table renamed (a schema change): a transient read failure, logged.
    case = new_opencode(h, tmp_path, "message table renamed")
    case.turn()
    since = h.mark()
    conn = apsw.Connection(str(case.db))
    conn.execute("ALTER TABLE message RENAME TO message_v2")
    conn.close()
    h.settle(at_least=3)
    case.check(turns=0, logged_since=since)
    conn = apsw.Connection(str(case.db))
    conn.execute("ALTER TABLE message_v2 RENAME TO message")
    conn.close()
    h.settle()
    case.check()

    # An undecodable part: not human, not counted; the next typed turn counts.
    case = new_opencode(h, tmp_path, "undecodable part")
    conn = apsw.Connection(str(case.db))
    with conn:
        mid = opencode_turn(conn, OPENCODE_MAIN, "undecodable", 900)
        conn.execute("UPDATE part SET data = 'not json {' WHERE message_id = ?", (mid,))
    conn.close()
    h.settle()
    case.check(turns=0)
    case.turn()
    h.settle()
    case.check()

    # The store gone: three missing scans, one upstream_missing, the link kept marked missing.
    for label, replace in (("deleted", lambda _p: None), ("replaced by a FIFO", os.mkfifo),
                           ("replaced by a directory", os.mkdir)):
        case = new_opencode(h, tmp_path, label)
        since = h.mark()
        case.db.unlink()
        replace(case.db)
        h.settle(at_least=4)
        assert h.kinds(case.key).count("upstream_missing") == 1, label
        assert "missing" in (h.marker(case.key) or {}), label
        case.check(turns=0, logged_since=since)

    # Adopting a broken or locked store: None, logged with the key, nothing recorded.
    adoptions: list[tuple[str, Callable[[Path], None]]] = [
        *breakers[:4], ("deleted", lambda p: p.unlink())]
    for label, breaker in adoptions:
        key = h.key("oa")
        db = tmp_path / key.rsplit(":", 1)[1] / "opencode.db"
        db.parent.mkdir(parents=True)
        shutil.copyfile(OPENCODE_DB, db)
        breaker(db)
        since = h.mark()
        assert h.adopt(key, "opencode", db, thread_id=OPENCODE_MAIN) is None, label
        assert h.kinds(key) == [], label
        assert h.logged(key, since=since), f"adopting a store ({label}) is not logged"
        h.tried[f"opencode adopt {label}"] += 1
    key = h.key("oa")
    db = tmp_path / key.rsplit(":", 1)[1] / "opencode.db"
    db.parent.mkdir(parents=True)
    shutil.copyfile(OPENCODE_DB, db)
    locker = apsw.Connection(str(db))
    try:
        locker.execute("BEGIN EXCLUSIVE")
        locker.execute("UPDATE event_sequence SET seq = seq WHERE aggregate_id = ?",
                       (OPENCODE_MAIN,))
        since = h.mark()
        assert h.adopt(key, "opencode", db, thread_id=OPENCODE_MAIN) is None
        assert h.logged(key, since=since), "adopting a locked store is not logged"
        h.tried["opencode adopt locked"] += 1
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    h.no_faults_logged()
    print(f"opencode: {sum(h.tried.values())} cases ({', '.join(sorted(h.tried))}); "
          f"{h.calls} bounded calls, slowest {h.slowest:.2f}s")


# --- cases the library does not report with the session key, or gets wrong -----------------


def test_a_pi_scan_reads_past_a_complete_line_that_is_not_json(
    harness: Harness, tmp_path: Path,
) -> None:
    """Issue 25 item 13: one complete invalid line used to stop a Pi session for good.
    It is decided not typed, logged once, and the rows around it count."""
    path = tmp_path / "pi.jsonl"
    path.write_bytes(pi_header() + pi_user("baseline"))
    key = harness.key("pi")
    track = harness.track(key, "pi", path, "pi invalid line")
    since = harness.mark()
    append(path, pi_user("before") + b"\xff{not json\n" + pi_user("after"))
    harness.settle(at_least=3)
    harness.check(track)
    assert harness.turns(key) == 2
    marker = harness.marker(key)
    assert marker is not None
    assert marker["offset"] == path.stat().st_size
    assert len(_warnings(harness, key, since)) == 1  # named, at warning level
    append(path, b'{"type": "message", "mess\n' + pi_user("later"))
    harness.settle(at_least=3)
    assert harness.turns(key) == 3
    assert len(_warnings(harness, key, since)) == 1  # once per session, not per line


def _warnings(harness: Harness, key: str, since: int) -> list[str]:
    return [r.getMessage() for r in harness.caplog.records[since:]
            if r.levelno >= logging.WARNING and key in r.getMessage()]


def test_a_half_written_pi_line_still_waits_for_its_newline(
    harness: Harness, tmp_path: Path,
) -> None:
    """A last line without its newline is not decided: the marker stays before it."""
    path = tmp_path / "pi.jsonl"
    path.write_bytes(pi_header() + pi_user("baseline"))
    key = harness.key("pi")
    track = harness.track(key, "pi", path, "pi half line")
    half = pi_user("typed slowly")
    append(path, half[: len(half) // 2])
    harness.settle(at_least=2)
    assert harness.turns(key) == 0
    marker = harness.marker(key)
    assert marker is not None
    assert marker["offset"] == track.start
    append(path, half[len(half) // 2:])
    harness.settle(at_least=2)
    assert harness.turns(key) == 1


@pytest.mark.parametrize("how", ["truncated", "renamed over", "symlinked elsewhere"])
def test_a_rebaselined_transcript_is_logged_with_the_session_key(
    harness: Harness, tmp_path: Path, how: str,
) -> None:
    """Regression: before c2e3901 a re-baseline (truncated, renamed over, symlinked
    elsewhere) was committed without a log line, dropping what the old file held
    unreported."""
    path = copy_fixture("claude", MAIN_FIXTURE["claude"], tmp_path)
    key = harness.key("rb")
    harness.track(key, "claude", path, f"rebaseline {how}")
    append(path, claude_user("one") + claude_user("two"))
    harness.settle()
    since = harness.mark()
    if how == "truncated":
        os.truncate(path, path.stat().st_size // 2)
    elif how == "renamed over":
        new = tmp_path / "new.jsonl"
        new.write_bytes(path.read_bytes() + claude_user("three"))
        os.replace(new, path)
    else:
        other = copy_fixture("claude", OTHER_FIXTURE["claude"], tmp_path, "other.jsonl")
        path.unlink()
        path.symlink_to(other)
    harness.settle()
    assert harness.logged(key, since=since), f"a transcript {how} under the reader is not logged"


def test_a_turn_typed_after_a_truncation_is_counted(harness: Harness, tmp_path: Path) -> None:
    """Regression: the batch after a truncation ends at the offset an earlier batch ended at.

    Before c2e3901 the dedupe key was ``upstream:<key>:<source_key>:<end offset>`` and a
    re-baseline keeps the source key, so ``ON CONFLICT DO NOTHING`` swallowed the new turn
    while the marker moved past it. The marker's re-baseline epoch is now in the dedupe id.
    """
    path = copy_fixture("claude", MAIN_FIXTURE["claude"], tmp_path)
    key = harness.key("tr")
    harness.track(key, "claude", path, "truncate then regrow")
    size = path.stat().st_size
    append(path, claude_user("first typed"))
    harness.settle()
    assert harness.turns(key) == 1
    os.truncate(path, size)  # the writer took the row back (same inode)
    harness.settle()
    append(path, claude_user("other typed"))  # same length: the batch ends where the first did
    harness.settle()
    assert harness.turns(key) == 2, "the turn typed after the truncation was not recorded"


@pytest.mark.parametrize("pieces", [1, 2], ids=["emptied-then-rewritten", "half-then-rest"])
def test_a_rewrite_slower_than_the_settling_scan_does_not_count_old_turns(
    harness: Harness, tmp_path: Path, pieces: int,
) -> None:
    """Review finding: a file truncated and written back with its own bytes in pieces
    further apart than the settling scan counted its old turns again (the settling
    scan had re-baselined at the first piece). The marker remembers where it stood
    before the shrink; the same bytes back before that offset are not counted."""
    path = copy_fixture("claude", MAIN_FIXTURE["claude"], tmp_path)
    key = harness.key("slow-rewrite")
    harness.track(key, "claude", path, "slow rewrite")
    append(path, claude_user("one") + claude_user("two"))
    harness.settle()
    assert harness.turns(key) == 2
    content = path.read_bytes()
    cut = 0 if pieces == 1 else content.rfind(b"\n", 0, len(content) // 2) + 1
    os.truncate(path, cut)  # in place: same inode
    harness.settle(at_least=2)  # the shrink, then the settling re-baseline
    append(path, content[cut:])  # the rest of the old bytes, much later
    harness.settle(at_least=2)
    assert harness.turns(key) == 2, "old turns written back were counted again"
    append(path, claude_user("typed after the rewrite"))
    harness.settle()
    assert harness.turns(key) == 3


def _opencode_fault(h: Harness, tmp: Path, label: str) -> OpenCodeCase:
    case = new_opencode(h, tmp, label)
    case.turn()
    return case


def test_a_locked_opencode_store_is_logged_with_the_session_key(
    harness: Harness, tmp_path: Path,
) -> None:
    case = _opencode_fault(harness, tmp_path, "locked")
    since = harness.mark()
    locker = apsw.Connection(str(case.db))
    try:
        locker.execute("BEGIN EXCLUSIVE")
        harness.scan()
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert harness.caplog.records[since:], "not logged at all"
    assert harness.logged(case.key, since=since), "the lock is logged without the session key"


@pytest.mark.parametrize("fault", ["corrupt header", "unknown schema"])
def test_a_broken_opencode_store_is_logged_with_the_session_key(
    harness: Harness, tmp_path: Path, fault: str,
) -> None:
    case = _opencode_fault(harness, tmp_path, fault)
    since = harness.mark()
    if fault == "corrupt header":
        with case.db.open("r+b") as handle:
            handle.write(b"garbage" * 20)
    else:
        case.db.unlink()
        conn = apsw.Connection(str(case.db))
        conn.execute("CREATE TABLE unrelated (x)")
        conn.close()
    harness.settle(at_least=2)
    assert harness.caplog.records[since:], "not logged at all"
    assert harness.logged(case.key, since=since), f"the {fault} is logged without the session key"


def test_invalid_utf8_in_an_opencode_sequence_never_reaches_the_caller(
    harness: Harness, tmp_path: Path,
) -> None:
    transcript = copy_fixture("claude", MAIN_FIXTURE["claude"], tmp_path)
    claude = harness.track(harness.key("cl"), "claude", transcript, "claude beside opencode")
    case = new_opencode(harness, tmp_path, "invalid UTF-8 sequence")
    conn = apsw.Connection(str(case.db))
    conn.execute("UPDATE event_sequence SET seq = CAST(X'31FF' AS TEXT) WHERE aggregate_id = ?",
                 (OPENCODE_MAIN,))
    conn.close()
    append(transcript, claude_user("typed into the other session"))
    harness.settle()  # fails here: scan_upstream raises UnicodeDecodeError
    harness.check(claude)
    assert harness.turns(claude.key) == 1, "one bad store stopped every other link's scan"
    case.check(turns=0)


def test_invalid_utf8_in_an_opencode_message_is_a_transient_read_failure(
    harness: Harness, tmp_path: Path,
) -> None:
    case = new_opencode(harness, tmp_path, "invalid UTF-8 message")
    since = harness.mark()
    conn = apsw.Connection(str(case.db))
    with conn:
        mid = opencode_turn(conn, OPENCODE_MAIN, "typed", 1)
        conn.execute("UPDATE message SET data = CAST(X'7B22726F6C65223A2275736572FF227D' AS TEXT)"
                     " WHERE id = ?", (mid,))
    conn.close()
    harness.settle(at_least=3)
    case.check(turns=0, logged_since=since)
    harness.no_faults_logged()


@pytest.mark.parametrize("column", ["event_sequence.seq", "session.title"])
def test_adopting_an_opencode_store_with_invalid_utf8_returns_none(
    harness: Harness, tmp_path: Path, column: str,
) -> None:
    db = tmp_path / "opencode.db"
    shutil.copyfile(OPENCODE_DB, db)
    table, name = column.split(".")
    key_column = "aggregate_id" if table == "event_sequence" else "id"
    conn = apsw.Connection(str(db))
    conn.execute(f"UPDATE {table} SET {name} = CAST(X'31FF' AS TEXT) WHERE {key_column} = ?",
                 (OPENCODE_MAIN,))
    conn.close()
    key = harness.key("oa")
    since = harness.mark()
    assert harness.adopt(key, "opencode", db, thread_id=OPENCODE_MAIN) is None
    assert harness.logged(key, since=since)


def test_fuzz_fixtures_are_present() -> None:
    """The real fixtures this suite mutates exist (a missing one would hollow it out)."""
    for table in (LINKED, REFUSED):
        for source, names in table.items():
            for name in names:
                assert (FIXTURES / SOURCE_DIRS[source] / name).is_file(), name
    assert OPENCODE_DB.is_file()
