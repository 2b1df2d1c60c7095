"""The OpenCode SQLite reader and classifier (``actors.upstream.opencode.store``).

Three kinds of test:

* the generated 1.18.33 store in ``shared/fixtures/upstream/opencode`` (made
  by the real binaries, see PROVENANCE.md): a decision for every message of
  every session, read from the rows by hand;
* anchor scenarios 89-99 (§4.7), ported from OpenClaw's fake ``opencode`` CLI
  onto synthetic databases built in ``tmp_path`` with the fixture's own schema
  and rows in OpenCode's real row/part JSON shapes;
* the read-only connection: concurrent WAL writer, never writing or
  checkpointing, and locked / corrupt / unknown-schema databases.

The fixture directory is read-only in CI, so each test copies the database
into ``tmp_path`` first.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import apsw
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.upstream import Unit, normalize_text, text_hash
from actors.upstream.opencode import store as oc
from actors.upstream.opencode.store import (
    SHELL_SENTINEL,
    OpenCodeMarker,
    OpenCodeMessage,
    OpenCodePart,
    PartSource,
    SourceText,
)
from tests import conftest

FIXTURES = conftest.FIXTURES / "opencode"
GENERATED_DB = FIXTURES / "opencode-1.18.33-generated.db"
EXPORT_JSON = FIXTURES / "opencode-1.18.33-export-main-session.json"

MAIN = "ses_dd45483e1ffey2Pb2WIeXKDqPz"
CHILD_TASK = "ses_dd4546f3affe14h47P40rzt6ym"
CHILD_SCOUT = "ses_dd4546a7effeDNtDGa28ss6V3D"
ACP_PLAIN = "ses_dd4543c24ffejqmAZxy1b9Lb38"
RUN = "ses_dd4537039ffecBg3ADoT7o4TaI"
ACP_ANNOTATED = "ses_dd452c4cfffeCUzx6jdvKQ9r9k"

FAST_BUSY_MS = 150


# --- fixture database ------------------------------------------------------------


@pytest.fixture
def generated_db(tmp_path: Path) -> Path:
    """A private copy of the generated 1.18.33 store."""
    target = tmp_path / "opencode.db"
    shutil.copyfile(GENERATED_DB, target)
    return target


@pytest.fixture(scope="session")
def schema(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The CREATE statements of the 1.18.33 store, from its ``sqlite_schema``."""
    copy = tmp_path_factory.mktemp("schema") / "opencode.db"
    shutil.copyfile(GENERATED_DB, copy)
    conn = oc.open_opencode_db(copy)
    try:
        return [
            sql for (sql,) in conn.execute(
                "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL"
                " AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
            )
        ]
    finally:
        conn.close()


def _typed(text: str) -> tuple[bool, str, str]:
    return (True, "typed", text)


def _not(reason: str) -> tuple[bool, str, None]:
    return (False, reason, None)


ASSISTANT = _not("not_user")

# Read from the rows (see PROVENANCE.md for what each prompt was).
EXPECTED: dict[str, list[tuple[str, tuple[bool, str, str | None]]]] = {
    MAIN: [
        ("msg_22bab7c49001oPZEXBenGXaVpT", _typed("Plain typed prompt: what is in this repo?")),
        ("msg_22bab7f80001ntQjV2JELGyflP", ASSISTANT),
        # "Explain @README.md please": the file part's source.text [8, 18) is cut.
        ("msg_22bab84dc001C7XjrT8JIrq16N", _typed("Explain please")),
        ("msg_22bab8513001pBZp1Ak6Dkn27j", ASSISTANT),
        ("msg_22bab86fc001bLnTTOOFXcEOa1", _not("file_mention_only")),  # "@src/app.py"
        ("msg_22bab8718001zv8Nhskjb6vJ33", ASSISTANT),
        ("msg_22bab8a3b001tnyBi4xgWfc4Qg", _not("image_only")),  # "[Image 1]" + png
        ("msg_22bab8a6d001vAytypjcefBBoP", ASSISTANT),
        # The agent part's source has no .text: the @general mention stays.
        ("msg_22bab8c2b001g7v3EI8TcK03aw", _typed("@general check the src folder")),
        ("msg_22bab8c3a001nvI7Ne6scxU4Zi", ASSISTANT),
        ("msg_22bab8deb001HubNrDn4WfKKY8", _typed("[[bash]] run a quick echo")),
        ("msg_22bab8df2001xNupByQ8IfGAgn", ASSISTANT),
        ("msg_22bab8ed6001oT6H0vaUzkEZSM", ASSISTANT),
        ("msg_22bab908c001lX4CVb1GbCxlY3", _typed("[[task]] delegate exploring to a subagent")),
        ("msg_22bab9092001uaUYIb1uSThm39", ASSISTANT),
        ("msg_22bab918f001Ld30R50KcKOFRV", ASSISTANT),
        # /greet: OpenCode stores only the expanded template, not synthetic.
        ("msg_22bab9341001SdI6HySDaPAq5D",
         _typed("Write a one-line greeting for the fixture team.")),
        ("msg_22bab934e001lGL1WXCXME5ojM", ASSISTANT),
        ("msg_22bab956e0010l9CCuRGJdyMLs", _not("subtask")),  # /scout: one subtask part
        ("msg_22bab957a001p6KgVHrzeo1M1u", ASSISTANT),
        ("msg_22bab95f1001qFedt1I97GLJgU", _not("synthetic")),  # "Summarize the task tool…"
        ("msg_22bab95f3001olPZ8o6G09xoFC", ASSISTANT),
        ("msg_22bab977f001vxWF5JsZN618fs", _not("shell")),  # !echo shell-from-user
        ("msg_22bab9781001lp0waktgLWvGSc", ASSISTANT),
        # noReply injection: indistinguishable from typed text in storage.
        ("msg_22bab98bd001ZxlcXZyHdcmjJW", _typed("Injected context without reply")),
        ("msg_22bab99f3001xCq427Fr92RVxN", _typed("Thanks, that is all.")),
        ("msg_22bab99f9001THMjUa2Y40hf0K", ASSISTANT),
    ],
    CHILD_TASK: [
        ("msg_22bab90c90018141JkEpUzaVgf", _not("child_session")),  # model-written prompt
        ("msg_22bab90df001C5cU9kUZZRT9eW", _not("child_session")),
    ],
    CHILD_SCOUT: [
        ("msg_22bab95860012KTdDM13vbs4jh", _not("child_session")),
        ("msg_22bab95a3001kF05SedAwpoj6m", _not("child_session")),
    ],
    ACP_PLAIN: [
        ("msg_22babc40e001BkTaZU8dsh6Tbz", _typed("Prompt sent by an ACP client")),
        ("msg_22babc424001p6LxeYz5TSUoam", ASSISTANT),
        # resource_link: synthetic Read texts + a file part without source.
        ("msg_22babc861001CedUo08fxKvNzl", _typed("Look at this file")),
        ("msg_22babc884001eamWFbQ4FsskvJ", ASSISTANT),
        ("msg_22babc958001y1C0XPozGLZgad", _typed("Write a one-line greeting for ACP users.")),
        ("msg_22babc95f001dp6IVjtK6C6045", ASSISTANT),
    ],
    RUN: [
        # `opencode run` created it (its ruleset denies "question": nobody is
        # there to answer): a program drives it, so nothing counts.
        ("msg_22bac8ffe0015nlM4jc2zuli6b", _not("program_session")),
        ("msg_22bac921d001TtqWWbn1pg10Pl", _not("program_session")),
    ],
    ACP_ANNOTATED: [
        # audience:["assistant"] -> synthetic, audience:["user"] -> ignored: both dropped.
        ("msg_22bad3b77001KpndubN81JD3bj", _typed("Visible request typed in an ACP client")),
        ("msg_22bad3b88001d9yHtn1257cTkT", ASSISTANT),
        ("msg_22bad3dfc001oIZ42Ubz9NoSuX", _not("image_only")),  # lone file part "image"
        ("msg_22bad3e1d00144a14yJ15I3asu", ASSISTANT),
        # Embedded resource: looks human and counts, as in OpenClaw (formats doc §4.3).
        ("msg_22bad3ec5001FL3HMuFGwT8B85",
         _typed('[/home/user/ocgen/proj/src/app.py] print("hi")')),
        ("msg_22bad3ecb001gmqRx4g8DDV04R", ASSISTANT),
    ],
}

FIXTURE_SEQUENCES = {
    MAIN: 188, CHILD_TASK: 15, CHILD_SCOUT: 15, ACP_PLAIN: 46, RUN: 15, ACP_ANNOTATED: 45,
}


def _shape(decisions: list[tuple[str, Unit]]) -> list[tuple[str, tuple[bool, str, str | None]]]:
    return [(mid, (unit.human, unit.reason, unit.text)) for mid, unit in decisions]


@pytest.mark.parametrize("session_id", list(EXPECTED))
def test_fixture_every_message_decision(generated_db: Path, session_id: str) -> None:
    decisions = oc.classify_db_session(generated_db, session_id)

    assert _shape(decisions) == EXPECTED[session_id]
    conn = oc.open_opencode_db(generated_db)
    try:
        created = {m.id: m.created for m in oc.load_messages(conn, session_id)}
    finally:
        conn.close()
    assert all(unit.occurred_at == created[mid] for mid, unit in decisions)


def test_fixture_covers_every_session(generated_db: Path) -> None:
    conn = oc.open_opencode_db(generated_db)
    try:
        ids = {sid for (sid,) in conn.execute("SELECT id FROM session")}
        counts = dict(conn.execute("SELECT session_id, count(*) FROM message GROUP BY session_id"))
    finally:
        conn.close()
    assert ids == set(EXPECTED)
    assert counts == {sid: len(rows) for sid, rows in EXPECTED.items()}
    assert counts[MAIN] == 27


def test_fixture_sequences_in_one_batch(generated_db: Path) -> None:
    conn = oc.open_opencode_db(generated_db)
    statements: list[str] = []

    def trace(_cursor: apsw.Cursor, sql: str, _bindings: Any) -> bool:
        statements.append(sql)
        return True

    try:
        conn.exec_trace = trace
        sequences = oc.read_sequences(conn, [*FIXTURE_SEQUENCES, "ses_gone", MAIN])
    finally:
        conn.close()
    assert sequences == FIXTURE_SEQUENCES  # "ses_gone" is absent: no such session
    assert sum("event_sequence" in sql for sql in statements) == 1


def test_fixture_session_info_flags_children(generated_db: Path) -> None:
    conn = oc.open_opencode_db(generated_db)
    try:
        infos = {sid: oc.read_session_info(conn, sid) for sid in EXPECTED}
        assert oc.read_session_info(conn, "ses_gone") is None
    finally:
        conn.close()
    children = {sid for sid, info in infos.items() if info is not None and info.is_child}
    assert children == {CHILD_TASK, CHILD_SCOUT}
    driven = {sid for sid, info in infos.items() if info is not None and info.is_program_driven}
    assert driven == {RUN}  # children deny "task", not "question"
    assert {sid: info.refusal for sid, info in infos.items() if info is not None} == {
        MAIN: None, CHILD_TASK: "child_session", CHILD_SCOUT: "child_session",
        ACP_PLAIN: None, RUN: "program_session", ACP_ANNOTATED: None}
    task = infos[CHILD_TASK]
    assert task is not None
    assert task.parent_id == MAIN
    assert task.title == "Explore repo (@general subagent)"
    main = infos[MAIN]
    assert main is not None
    assert (main.title, main.version, main.parent_id, main.time_archived) == (
        "Fixture session", "1.18.33", None, None)
    assert main.time_created == 1796028988446


def test_fixture_baseline_markers(generated_db: Path) -> None:
    conn = oc.open_opencode_db(generated_db)
    try:
        markers = {sid: oc.baseline_marker(conn, sid) for sid in EXPECTED}
        assert oc.baseline_marker(conn, "ses_gone") is None
    finally:
        conn.close()
    assert markers == {
        MAIN: OpenCodeMarker(188, "msg_22bab99f3001xCq427Fr92RVxN"),
        CHILD_TASK: OpenCodeMarker(15, None),
        CHILD_SCOUT: OpenCodeMarker(15, None),
        ACP_PLAIN: OpenCodeMarker(46, "msg_22babc958001y1C0XPozGLZgad"),
        RUN: OpenCodeMarker(15, None),
        ACP_ANNOTATED: OpenCodeMarker(45, "msg_22bad3ec5001FL3HMuFGwT8B85"),
    }


def test_fixture_load_messages_order_and_parts(generated_db: Path) -> None:
    conn = oc.open_opencode_db(generated_db)
    try:
        messages = oc.load_messages(conn, MAIN)
        full = oc.load_messages(conn, MAIN, include_assistant_parts=True)
        assert oc.load_messages(conn, "ses_gone") == []
    finally:
        conn.close()
    assert [m.id for m in messages] == [mid for mid, _ in EXPECTED[MAIN]]
    assert [(m.created, m.id) for m in messages] == sorted((m.created, m.id) for m in messages)
    assert not any(m.undecodable for m in messages)
    # Assistant parts (tool output) are only loaded on request.
    assert all(not m.parts for m in messages if m.role == "assistant")
    assert all(m.parts for m in full)
    readme = next(m for m in messages if m.id == "msg_22bab84dc001C7XjrT8JIrq16N")
    assert [p.type for p in readme.parts] == ["text", "text", "text", "file"]
    assert [p.id for p in readme.parts] == sorted(p.id for p in readme.parts)
    assert readme.parts[1].synthetic is True
    assert readme.parts[3].source == PartSource(text=SourceText("@README.md", 8, 18))
    tool = next(p for m in full for p in m.parts if p.type == "tool")
    assert tool.text is None  # tool state is skipped, not decoded


def test_export_json_classifies_like_the_database(generated_db: Path) -> None:
    """``opencode export`` (what OpenClaw reads) and the rows give the same decisions."""
    export = json.loads(EXPORT_JSON.read_text(encoding="utf-8"))
    messages = [
        OpenCodeMessage(
            id=item["info"]["id"], role=item["info"]["role"],
            created=item["info"]["time"]["created"],
            parts=tuple(msgspec.convert(p, OpenCodePart) for p in item["parts"]
                        if item["info"]["role"] == "user"),
        )
        for item in export["messages"]
    ]
    from_export = oc.classify_messages(messages, last_human_message_id=None)

    assert _shape(list(from_export.decisions)) == EXPECTED[MAIN]
    assert from_export.last_human_message_id == "msg_22bab99f3001xCq427Fr92RVxN"


def test_fixture_ids_unwrap_to_their_creation_time(generated_db: Path) -> None:
    """Ids hold created_ms * 0x1000 + counter (mod 2**48): the basis of the wrap policy."""
    conn = oc.open_opencode_db(generated_db)
    try:
        rows = list(conn.execute("SELECT id, time_created FROM message"))
    finally:
        conn.close()
    for message_id, created in rows:
        unwrapped = oc.unwrapped_id(message_id, created)
        assert unwrapped is not None
        assert abs(unwrapped // 0x1000 - created) <= 1000, message_id


# --- synthetic databases in OpenCode's format -----------------------------------------

BASE_MS = 1_796_030_000_000
PROJECT_ID = "3fbdf7f8bd3883037d80b445136aff4a357eaa3a"  # root-commit hash, as in the fixture
MOCK_MODEL = {"providerID": "mock", "modelID": "mock-model"}
PIXEL = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8"
         "BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
CONTINUE_TEXT = ("Continue if you have next steps, or stop and ask for clarification if you are "
                 "unsure how to proceed.")


def oc_id(prefix: str, ms: int, counter: int) -> str:
    """An id in OpenCode's shape: 6 bytes of ms * 0x1000 + counter, then 14 base62 chars."""
    return f"{prefix}_{(ms * 0x1000 + counter) % (1 << 48):012x}{counter:014d}"


# Part JSON shapes copied from the generated store (compaction ones from
# OpenCode's compaction.ts: the fixture has no compaction).
def text(value: str, **flags: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **flags}


def file_mention(value: str, start: int, end: int, path: str = "README.md") -> dict[str, Any]:
    return {"type": "file", "mime": "text/plain", "filename": path,
            "url": f"file:///home/user/ocgen/proj/{path}",
            "source": {"text": {"value": value, "start": start, "end": end},
                       "type": "file", "path": path}}


def image(filename: str = "pixel.png", span: tuple[str, int, int] | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "file", "mime": "image/png", "filename": filename,
                            "url": PIXEL}
    if span is not None:
        part["source"] = {"text": {"value": span[0], "start": span[1], "end": span[2]},
                          "type": "file", "path": filename}
    return part


SUBTASK = {"type": "subtask", "agent": "general", "description": "Subtask command (fixture)",
           "command": "scout", "model": MOCK_MODEL,
           "prompt": "Look around the repository and summarise the src folder."}
SHELL = {"type": "text", "text": SHELL_SENTINEL, "synthetic": True}
COMPACTION = {"type": "compaction", "auto": True}
CONTINUE = {"type": "text", "synthetic": True, "text": CONTINUE_TEXT,
            "metadata": {"compaction_continue": True}}


class Store:
    """A synthetic ``opencode.db``: the fixture's schema, rows as OpenCode 1.18.33 writes them."""

    def __init__(self, path: Path, schema: list[str], *, wal: bool = True) -> None:
        self.path = path
        self.conn = apsw.Connection(str(path))
        self.conn.set_busy_timeout(5000)
        if wal:
            self.conn.execute("PRAGMA journal_mode = WAL")
        with self.conn:
            for sql in schema:
                self.conn.execute(sql)
            self.conn.execute(
                "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes)"
                " VALUES (?, '/home/user/ocgen/proj', 'git', ?, ?, '[]')",
                (PROJECT_ID, BASE_MS, BASE_MS))
        self.now = BASE_MS
        self.counter = 0

    def tick(self) -> int:
        self.now += 1000
        return self.now

    def new_id(self, prefix: str) -> str:
        self.counter += 1
        return oc_id(prefix, self.now, self.counter)

    def session(self, *, parent_id: str | None = None, seq: int | None = 0) -> str:
        sid = self.new_id("ses")
        with self.conn:
            self.conn.execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title,"
                " version, time_created, time_updated) VALUES (?, ?, ?, 'shiny-mountain',"
                " '/home/user/ocgen/proj', 'Synthetic session', '1.18.33', ?, ?)",
                (sid, PROJECT_ID, parent_id, self.now, self.now))
            if seq is not None:
                self.conn.execute("INSERT INTO event_sequence (aggregate_id, seq) VALUES (?, ?)",
                                  (sid, seq))
        return sid

    def set_seq(self, sid: str, seq: int) -> None:
        self.conn.execute(
            "INSERT INTO event_sequence (aggregate_id, seq) VALUES (?, ?)"
            " ON CONFLICT (aggregate_id) DO UPDATE SET seq = excluded.seq", (sid, seq))

    def user(self, sid: str, *parts: dict[str, Any], seq: int | None = None,
             model: dict[str, str] | None = None) -> str:
        created = self.tick()
        mid = self.new_id("msg")
        data = {"role": "user", "time": {"created": created}, "agent": "build",
                "model": model or MOCK_MODEL, "summary": {"diffs": []}}
        with self.conn:
            self.conn.execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data)"
                " VALUES (?, ?, ?, ?, ?)", (mid, sid, created, created, json.dumps(data)))
            for part in parts:
                self._part(sid, mid, part)
            if seq is not None:
                self.set_seq(sid, seq)
        return mid

    def assistant(self, sid: str, parent: str, reply: str = "OK.", *,
                  seq: int | None = None, error: dict[str, Any] | None = None,
                  output: int = 10) -> str:
        created = self.tick()
        mid = self.new_id("msg")
        data: dict[str, Any] = {
            "parentID": parent, "role": "assistant", "mode": "build", "agent": "build",
            "path": {"cwd": "/home/user/ocgen/proj", "root": "/home/user/ocgen/proj"},
            "cost": 0, "tokens": {"total": 100 + output, "input": 100, "output": output,
                                  "reasoning": 0, "cache": {"write": 0, "read": 0}},
            "modelID": "mock-model", "providerID": "mock",
            "time": {"created": created, "completed": created + 100}, "finish": "stop"}
        if error is not None:
            data["error"] = error
        with self.conn:
            self.conn.execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data)"
                " VALUES (?, ?, ?, ?, ?)", (mid, sid, created, created, json.dumps(data)))
            self._part(sid, mid, {"type": "step-start", "snapshot": "4e13d967"})
            self._part(sid, mid, text(reply, time={"start": created, "end": created + 1}))
            if seq is not None:
                self.set_seq(sid, seq)
        return mid

    def add_part(self, sid: str, mid: str, part: dict[str, Any], *, seq: int) -> None:
        with self.conn:
            self._part(sid, mid, part)
            self.set_seq(sid, seq)

    def _part(self, sid: str, mid: str, part: dict[str, Any]) -> None:
        self.conn.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (self.new_id("prt"), mid, sid, self.now, self.now, json.dumps(part)))

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def store(tmp_path: Path, schema: list[str]) -> Iterator[Store]:
    db = Store(tmp_path / "opencode.db", schema)
    yield db
    db.close()


class Outcome(NamedTuple):
    kind: str  # "activity" or "missing"
    turns: int = 0
    marker: OpenCodeMarker | None = None
    dedupe_id: str | None = None
    read_messages: bool = False


def check(path: Path, sid: str, marker: OpenCodeMarker,
          own_texts: tuple[str, ...] = ()) -> Outcome | None:
    """Anchor §3.17's per-probe steps, driven through this module (``None`` = no news)."""
    try:
        conn = oc.open_opencode_db(path, busy_timeout_ms=FAST_BUSY_MS)
    except apsw.Error:
        return None
    try:
        try:
            sequences = oc.read_sequences(conn, [sid])
        except apsw.Error:
            return None  # a failed query is not evidence of deletion
        if sid not in sequences:
            return Outcome("missing")
        seq = sequences[sid]
        if seq == marker.seq:
            return None
        if seq < marker.seq:
            return Outcome("activity", 0, OpenCodeMarker(seq, marker.last_human_message_id))
        try:
            messages = oc.load_messages(conn, sid)
        except apsw.Error:
            return None
    finally:
        conn.close()
    result = oc.classify_messages(messages, last_human_message_id=marker.last_human_message_id)
    own = {text_hash(t) for t in own_texts}
    counted = [mid for mid, unit in result.human if text_hash(unit.text) not in own]
    return Outcome("activity", len(counted), OpenCodeMarker(seq, result.last_human_message_id),
                   counted[-1] if counted else None, read_messages=True)


# --- anchor scenarios 89-99 -------------------------------------------------------------


def test_scenario_89_unchanged_sequence_reads_nothing_then_a_new_turn_counts(
    store: Store,
) -> None:
    sid = store.session(seq=0)
    first = store.user(sid, text("hello"))
    store.assistant(sid, first, seq=1)
    conn = oc.open_opencode_db(store.path)
    try:
        marker = oc.baseline_marker(conn, sid)
    finally:
        conn.close()
    assert marker == OpenCodeMarker(1, first)

    assert check(store.path, sid, marker) is None  # seq unchanged: messages not read

    second = store.user(sid, text("external OpenCode turn"), seq=3)
    outcome = check(store.path, sid, marker)
    assert outcome == Outcome("activity", 1, OpenCodeMarker(3, second), second, True)


def test_scenario_90_regressed_sequence_rebaselines_without_counting(store: Store) -> None:
    sid = store.session(seq=0)
    old = store.user(sid, text("old turn"))

    reset = check(store.path, sid, OpenCodeMarker(12, old))
    assert reset == Outcome("activity", 0, OpenCodeMarker(0, old), None, read_messages=False)

    new = store.user(sid, text("new after migration"), seq=2)
    assert reset.marker is not None
    assert check(store.path, sid, reset.marker) == Outcome(
        "activity", 1, OpenCodeMarker(2, new), new, True)


def test_scenario_91_staged_projection_counts_exactly_once(store: Store) -> None:
    sid = store.session(seq=0)
    store.assistant(sid, "msg_none", "ready", seq=1)
    marker = OpenCodeMarker(1, None)

    staged = store.user(sid, seq=2)  # the message row lands before its parts
    outcome = check(store.path, sid, marker)
    assert outcome is not None
    assert (outcome.turns, outcome.marker) == (0, OpenCodeMarker(2, None))
    reasons = {mid: unit.reason for mid, unit in oc.classify_db_session(store.path, sid)}
    assert reasons[staged] == "no_parts"

    store.add_part(sid, staged, file_mention("@README.md", 8, 18), seq=3)
    outcome = check(store.path, sid, OpenCodeMarker(2, None))
    assert outcome is not None
    assert (outcome.turns, outcome.marker) == (0, OpenCodeMarker(3, None))

    store.add_part(sid, staged, text("Explain @README.md please"), seq=4)
    outcome = check(store.path, sid, OpenCodeMarker(3, None))
    assert outcome == Outcome("activity", 1, OpenCodeMarker(4, staged), staged, True)

    store.add_part(sid, staged, text("late detail"), seq=5)
    outcome = check(store.path, sid, OpenCodeMarker(4, staged))
    assert outcome is not None
    assert (outcome.turns, outcome.marker) == (0, OpenCodeMarker(5, staged))


def test_scenario_92_compaction_replay_is_consumed_but_not_counted(store: Store) -> None:
    sid = store.session(seq=0)
    first = store.user(sid, text("hidden", ignored=True), text("please keep going"))
    store.assistant(sid, first, "working")
    compaction = store.user(sid, COMPACTION)
    store.assistant(sid, compaction, "summary")
    replay = store.user(sid, text("  please   keep going "), seq=9)

    outcome = check(store.path, sid, OpenCodeMarker(4, first))
    assert outcome == Outcome("activity", 0, OpenCodeMarker(9, replay), None, True)
    reasons = [unit.reason for _, unit in oc.classify_db_session(store.path, sid)]
    assert reasons == ["typed", "not_user", "compaction", "not_user", "replay"]


@pytest.mark.parametrize("failure", [
    {"error": {"name": "APIError", "data": {"message": "overloaded", "isRetryable": True}}},
    {"error": {"name": "MessageAbortedError", "data": {"message": "aborted"}}},
    {"output": 0},  # came back empty
])
def test_a_text_sent_again_after_a_failed_or_empty_reply_is_typed(
    store: Store, failure: dict[str, Any],
) -> None:
    sid = store.session(seq=0)
    first = store.user(sid, text("fix the build"))
    store.assistant(sid, first, "", **failure)
    again = store.user(sid, text("fix the build"), seq=5)
    reasons = [unit.reason for _, unit in oc.classify_db_session(store.path, sid)]
    assert reasons == ["typed", "not_user", "typed"]
    outcome = check(store.path, sid, OpenCodeMarker(2, first))
    assert outcome is not None
    assert (outcome.turns, outcome.marker) == (1, OpenCodeMarker(5, again))


def test_a_text_sent_again_with_another_model_is_typed_and_the_same_model_is_replay(
    store: Store,
) -> None:
    sid = store.session(seq=0)
    first = store.user(sid, text("explain this"))
    store.assistant(sid, first, "An answer.")
    store.user(sid, text("explain this"), model={"providerID": "other", "modelID": "big"})
    store.assistant(sid, first, "Another answer.")
    store.user(sid, text("explain this"), seq=9)  # the first model again: as the first message
    reasons = [unit.reason for _, unit in oc.classify_db_session(store.path, sid)]
    assert reasons == ["typed", "not_user", "typed", "not_user", "replay"]


def test_scenario_93_media_placeholder_replay(store: Store) -> None:
    sid = store.session(seq=0)
    shot = store.user(sid, image("screen.png"))
    store.assistant(sid, shot, "working")
    compaction = store.user(sid, COMPACTION)
    store.assistant(sid, compaction, "summary")
    replay = store.user(sid, text("[Attached image/png: screen.png]"), seq=7)

    outcome = check(store.path, sid, OpenCodeMarker(2, None))
    assert outcome == Outcome("activity", 0, OpenCodeMarker(7, replay), None, True)


def test_scenario_94_replay_window_is_the_previous_50_user_messages(store: Store) -> None:
    sid = store.session(seq=0)
    first = store.user(sid, text("repeat me"))
    for _ in range(50):
        store.user(sid, text("internal", synthetic=True))
    again = store.user(sid, text("repeat me"), seq=80)

    outcome = check(store.path, sid, OpenCodeMarker(1, first))
    assert outcome == Outcome("activity", 1, OpenCodeMarker(80, again), again, True)


def test_scenario_94_within_the_window_it_is_suppressed(store: Store) -> None:
    sid = store.session(seq=0)
    first = store.user(sid, text("repeat me"))
    for _ in range(49):
        store.user(sid, text("internal", synthetic=True))
    again = store.user(sid, text("repeat me"), seq=80)

    outcome = check(store.path, sid, OpenCodeMarker(1, first))
    assert outcome == Outcome("activity", 0, OpenCodeMarker(80, again), None, True)


def test_scenario_95_ignored_synthetic_shell_compaction_rows_never_count(store: Store) -> None:
    sid = store.session(seq=0)
    store.assistant(sid, "msg_none", "ready")
    store.user(sid, text("hidden", ignored=True))
    store.user(sid, text("hidden", synthetic=True))
    store.user(sid, text(SHELL_SENTINEL))  # even without the synthetic flag
    store.user(sid, text("looks human"), COMPACTION)
    store.user(sid, text("continue", metadata={"compaction_continue": True}))
    store.user(sid, CONTINUE)
    store.user(sid, SHELL, seq=12)

    outcome = check(store.path, sid, OpenCodeMarker(1, None))
    assert outcome == Outcome("activity", 0, OpenCodeMarker(12, None), None, True)
    reasons = [unit.reason for _, unit in oc.classify_db_session(store.path, sid)]
    assert reasons == ["not_user", "synthetic", "synthetic", "shell", "compaction",
                       "compaction", "compaction", "shell"]


def test_scenario_96_file_mention_only_turn(store: Store) -> None:
    sid = store.session(seq=0)
    store.assistant(sid, "msg_none", "ready")
    store.user(sid, text("@notes.ts"), file_mention("@notes.ts", 0, 9, "notes.ts"), seq=3)

    outcome = check(store.path, sid, OpenCodeMarker(1, None))
    assert outcome == Outcome("activity", 0, OpenCodeMarker(3, None), None, True)


def test_scenario_97_ignored_text_beside_real_text_and_self_echo(store: Store) -> None:
    sid = store.session(seq=0)
    mid = store.user(sid, text("hidden", ignored=True), text("real external turn"), seq=4)

    assert check(store.path, sid, OpenCodeMarker(0, None)) == Outcome(
        "activity", 1, OpenCodeMarker(4, mid), mid, True)
    # The gateway's own text: the classifier still consumes it, the monitor drops it.
    assert check(store.path, sid, OpenCodeMarker(0, None), ("real  external turn ",)) == (
        Outcome("activity", 0, OpenCodeMarker(4, mid), None, True))

    store.assistant(sid, mid, "summary", seq=5)
    outcome = check(store.path, sid, OpenCodeMarker(4, mid))
    assert outcome == Outcome("activity", 0, OpenCodeMarker(5, mid), None, True)


def test_scenario_98_failures_are_no_news_and_absence_is_missing(
    store: Store, tmp_path: Path
) -> None:
    sid = store.session(seq=2)
    store.user(sid, text("external"))
    marker = OpenCodeMarker(1, None)

    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not an sqlite database" * 200)
    assert check(broken, sid, marker) is None
    assert check(tmp_path / "absent" / "opencode.db", sid, marker) is None

    with store.conn:
        store.conn.execute("DROP TABLE part")  # message read fails ("export failure")
    assert check(store.path, sid, marker) is None

    with store.conn:
        store.conn.execute("DELETE FROM message")
        store.conn.execute("DELETE FROM session")
    assert check(store.path, sid, marker) == Outcome("missing")


def test_scenario_99_session_without_event_sequence_row_is_seq_zero(store: Store) -> None:
    sid = store.session(seq=None)
    conn = oc.open_opencode_db(store.path)
    try:
        assert oc.read_sequences(conn, [sid]) == {sid: 0}
        assert oc.baseline_marker(conn, sid) == OpenCodeMarker(0, None)
    finally:
        conn.close()


def test_many_sessions_are_read_in_batches_of_500(store: Store) -> None:
    """Scenario 100's concern (bounded work per scan) for the batched query."""
    sids = [store.session(seq=n) for n in range(1201)]
    conn = oc.open_opencode_db(store.path)
    statements: list[str] = []

    def trace(_cursor: apsw.Cursor, sql: str, _bindings: Any) -> bool:
        statements.append(sql)
        return True

    try:
        conn.exec_trace = trace
        sequences = oc.read_sequences(conn, [*sids, "ses_gone"])
    finally:
        conn.close()
    assert sequences == {sid: n for n, sid in enumerate(sids)}
    assert sum("event_sequence" in sql for sql in statements) == 3


# --- more classification rules, on synthetic databases ---------------------------------


def test_child_session_never_counts(store: Store) -> None:
    parent = store.session(seq=0)
    child = store.session(parent_id=parent, seq=3)
    store.user(child, text("List the top-level files and report back."))

    conn = oc.open_opencode_db(store.path)
    try:
        info = oc.read_session_info(conn, child)
        assert info is not None
        assert info.is_child
        assert oc.baseline_marker(conn, child) == OpenCodeMarker(3, None)
    finally:
        conn.close()
    decisions = oc.classify_db_session(store.path, child)
    assert [(u.human, u.reason) for _, u in decisions] == [(False, "child_session")]


def test_subtask_and_image_turns_are_not_human(store: Store) -> None:
    sid = store.session(seq=0)
    store.user(sid, SUBTASK)
    store.user(sid, text("[Image 1]"), image(span=("[Image 1]", 0, 9)))
    store.user(sid, text("pdf attached"), {"type": "file", "mime": "application/pdf",
                                           "filename": "a.pdf", "url": "data:application/pdf;"})
    decisions = oc.classify_db_session(store.path, sid)
    assert [(u.human, u.reason, u.text) for _, u in decisions] == [
        (False, "subtask", None), (False, "image_only", None), (True, "typed", "pdf attached")]


def test_undecodable_rows_are_not_human_and_not_consumed(store: Store) -> None:
    sid = store.session(seq=0)
    good = store.user(sid, text("first"))
    bad_part = store.user(sid, text("second"))
    store.conn.execute("UPDATE part SET data = '{\"type\": 7}' WHERE message_id = ?", (bad_part,))
    bad_message = store.user(sid, text("third"))
    store.conn.execute("UPDATE message SET data = 'not json' WHERE id = ?", (bad_message,))

    decisions = dict(oc.classify_db_session(store.path, sid))
    assert (decisions[good].human, decisions[bad_part].reason, decisions[bad_message].reason) == (
        True, "undecodable", "undecodable")
    conn = oc.open_opencode_db(store.path)
    try:
        assert oc.baseline_marker(conn, sid) == OpenCodeMarker(0, good)
    finally:
        conn.close()


def test_classify_db_session_unknown_session(store: Store) -> None:
    with pytest.raises(LookupError):
        oc.classify_db_session(store.path, "ses_gone")


# --- the read-only connection ---------------------------------------------------------


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_connection_is_read_only_and_never_writes(generated_db: Path) -> None:
    before = _sha256(generated_db)
    conn = oc.open_opencode_db(generated_db)
    try:
        assert conn.execute("PRAGMA query_only").fetchone() == (1,)
        for sid in EXPECTED:
            oc.baseline_marker(conn, sid)
        with pytest.raises(apsw.ReadOnlyError):
            conn.execute("DELETE FROM event_sequence")
    finally:
        conn.close()
    assert _sha256(generated_db) == before
    assert sorted(p.name for p in generated_db.parent.iterdir()) == ["opencode.db"]


def test_path_with_uri_characters(tmp_path: Path) -> None:
    target = tmp_path / "odd dir?#%" / "opencode.db"
    target.parent.mkdir()
    shutil.copyfile(GENERATED_DB, target)
    conn = oc.open_opencode_db(target)
    try:
        assert oc.read_sequences(conn, [RUN]) == {RUN: 15}
    finally:
        conn.close()


def test_reader_never_checkpoints_the_wal(store: Store) -> None:
    store.conn.wal_autocheckpoint(0)
    sid = store.session(seq=0)
    for n in range(20):
        store.user(sid, text(f"turn {n}"), seq=n + 1)
    wal = Path(f"{store.path}-wal")
    wal_before, db_before = wal.stat().st_size, _sha256(store.path)
    assert wal_before > 0

    conn = oc.open_opencode_db(store.path)
    try:
        assert oc.read_sequences(conn, [sid]) == {sid: 20}
        assert len(oc.load_messages(conn, sid)) == 20
    finally:
        conn.close()
    assert (wal.stat().st_size, _sha256(store.path)) == (wal_before, db_before)


def test_concurrent_writer_in_wal_mode(store: Store) -> None:
    """Reads see whole committed transactions while OpenCode keeps writing."""
    sid = store.session(seq=0)
    writer = apsw.Connection(str(store.path))
    writer.set_busy_timeout(5000)
    stop = threading.Event()
    errors: list[BaseException] = []
    total = 60

    def write() -> None:
        try:
            for n in range(total):
                created = BASE_MS + 10_000 + n
                mid = oc_id("msg", created, n + 1)
                with writer:  # message, its part and the seq bump: one transaction
                    writer.execute(
                        "INSERT INTO message (id, session_id, time_created, time_updated, data)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (mid, sid, created, created, json.dumps(
                            {"role": "user", "time": {"created": created}, "agent": "build",
                             "model": MOCK_MODEL})))
                    writer.execute(
                        "INSERT INTO part (id, message_id, session_id, time_created,"
                        " time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
                        (oc_id("prt", created, n + 1), mid, sid, created, created,
                         json.dumps(text(f"typed turn {n}"))))
                    writer.execute("UPDATE event_sequence SET seq = seq + 1 WHERE aggregate_id = ?",
                                   (sid,))
        except BaseException as exc:  # surfaced by the main thread
            errors.append(exc)
        finally:
            stop.set()

    thread = threading.Thread(target=write, name="opencode-writer")
    conn = oc.open_opencode_db(store.path, busy_timeout_ms=5000)  # WAL readers may briefly wait
    seen: list[int] = []
    deadline = time.monotonic() + 20
    try:
        thread.start()
        while (not stop.is_set() or not seen or seen[-1] < total) and (
            time.monotonic() < deadline
        ):
            with conn:
                seq = oc.read_sequences(conn, [sid])[sid]
                messages = oc.load_messages(conn, sid)
            assert len(messages) == seq  # one snapshot: seq and rows agree
            assert all(len(m.parts) == 1 for m in messages)  # never a half-written turn
            result = oc.classify_messages(messages, last_human_message_id=None)
            assert len(result.human) == seq
            seen.append(seq)
            if errors:
                break
    finally:
        thread.join(timeout=10)
        conn.close()
        writer.close()
    assert not errors
    assert seen == sorted(seen)
    assert seen[-1] == total


def test_open_write_transaction_does_not_block_the_reader(store: Store) -> None:
    sid = store.session(seq=1)
    writer = apsw.Connection(str(store.path))
    conn = oc.open_opencode_db(store.path, busy_timeout_ms=5000)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE event_sequence SET seq = 99 WHERE aggregate_id = ?", (sid,))
        started = time.monotonic()
        assert oc.read_sequences(conn, [sid]) == {sid: 1}  # last committed value
        assert time.monotonic() - started < 1.0
        writer.execute("COMMIT")
        assert oc.read_sequences(conn, [sid]) == {sid: 99}
    finally:
        conn.close()
        writer.close()


def test_locked_rollback_journal_database_raises_busy(
    tmp_path: Path, schema: list[str]
) -> None:
    db = Store(tmp_path / "opencode.db", schema, wal=False)
    sid = db.session(seq=4)
    conn = oc.open_opencode_db(db.path, busy_timeout_ms=FAST_BUSY_MS)
    try:
        db.conn.execute("BEGIN EXCLUSIVE")
        started = time.monotonic()
        with pytest.raises(apsw.BusyError):
            oc.read_sequences(conn, [sid])
        assert time.monotonic() - started < 5.0
        db.conn.execute("ROLLBACK")
        assert oc.read_sequences(conn, [sid]) == {sid: 4}
    finally:
        conn.close()
        db.close()


def test_exclusive_wal_writer_raises_busy(store: Store) -> None:
    sid = store.session(seq=4)
    store.conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    store.set_seq(sid, 5)  # takes and keeps the exclusive lock
    conn = oc.open_opencode_db(store.path, busy_timeout_ms=FAST_BUSY_MS)
    try:
        started = time.monotonic()
        with pytest.raises(apsw.BusyError):
            oc.read_sequences(conn, [sid])
        assert time.monotonic() - started < 5.0
    finally:
        conn.close()


@pytest.mark.parametrize(
    "content",
    [b"SQLite format 3\x00" + b"\xff" * 4000, b"not a database at all" * 100],
    ids=["corrupt-header", "garbage"],
)
def test_corrupt_database_raises(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "opencode.db"
    path.write_bytes(content)
    conn = oc.open_opencode_db(path, busy_timeout_ms=FAST_BUSY_MS)
    try:
        with pytest.raises(apsw.Error):
            oc.read_sequences(conn, [MAIN])
    finally:
        conn.close()


def test_truncated_database_raises(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    path.write_bytes(GENERATED_DB.read_bytes()[: 4096 * 3])
    conn = oc.open_opencode_db(path, busy_timeout_ms=FAST_BUSY_MS)
    try:
        with pytest.raises(apsw.Error):
            oc.read_sequences(conn, list(FIXTURE_SEQUENCES))
    finally:
        conn.close()


@pytest.mark.parametrize(
    "schema_sql",
    [
        [],  # an empty file: a valid database with no tables
        ["CREATE TABLE session (id TEXT PRIMARY KEY)"],  # no event_sequence (e.g. 1.1.x)
        ["CREATE TABLE session (id TEXT PRIMARY KEY)",
         "CREATE TABLE event_sequence (aggregate_id TEXT, position INTEGER)"],
    ],
    ids=["empty", "no-event-sequence", "renamed-column"],
)
def test_unknown_schema_raises(tmp_path: Path, schema_sql: list[str]) -> None:
    path = tmp_path / "opencode.db"
    setup = apsw.Connection(str(path))
    for sql in schema_sql:
        setup.execute(sql)
    setup.close()
    conn = oc.open_opencode_db(path, busy_timeout_ms=FAST_BUSY_MS)
    try:
        with pytest.raises(apsw.SQLError):
            oc.read_sequences(conn, [MAIN])
    finally:
        conn.close()


def test_non_integer_sequence_raises_mismatch(store: Store) -> None:
    sid = store.session(seq=None)
    store.conn.execute("INSERT INTO event_sequence (aggregate_id, seq) VALUES (?, 'x')", (sid,))
    conn = oc.open_opencode_db(store.path)
    try:
        with pytest.raises(apsw.MismatchError):
            oc.read_sequences(conn, [sid])
    finally:
        conn.close()


def test_missing_file_cannot_be_opened(tmp_path: Path) -> None:
    with pytest.raises(apsw.CantOpenError):
        oc.open_opencode_db(tmp_path / "opencode.db")
    assert not (tmp_path / "opencode.db").exists()


def test_argument_checks(generated_db: Path) -> None:
    with pytest.raises(ValueError, match="busy_timeout_ms"):
        oc.open_opencode_db(generated_db, busy_timeout_ms=-1)
    conn = oc.open_opencode_db(generated_db)
    try:
        assert oc.read_sequences(conn, []) == {}
        with pytest.raises(TypeError):
            oc.read_sequences(conn, MAIN)
    finally:
        conn.close()
    with pytest.raises(ValueError, match="replay_window"):
        oc.classify_messages([], last_human_message_id=None, replay_window=-1)


# --- pure classification ---------------------------------------------------------------


def msg(mid: str, *parts: OpenCodePart, role: str = "user", created: int = 1) -> OpenCodeMessage:
    return OpenCodeMessage(id=mid, role=role, created=created, parts=parts)


def part(**fields: Any) -> OpenCodePart:
    return msgspec.convert(fields, OpenCodePart)


def test_mention_offsets_are_utf16_code_units() -> None:
    typed = "\N{SLIGHTLY SMILING FACE} see @a.py now"  # the emoji is 2 UTF-16 units
    mention = part(type="file", mime="text/plain", filename="a.py",
                   source={"text": {"value": "@a.py", "start": 7, "end": 12}})
    result = oc.classify_messages([msg("msg_1", part(type="text", text=typed), mention)],
                                  last_human_message_id=None)
    assert result.human[0][1].text == "\N{SLIGHTLY SMILING FACE} see now"


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        ({"value": "@b.py", "start": 0, "end": 5}, "@a.py here"),  # slice does not match
        ({"value": "@a.py", "start": 0, "end": 50}, "@a.py here"),  # past the end
        ({"value": "", "start": 3, "end": 1}, "@a.py here"),  # end before start
        ({"value": "@a.py", "start": 0, "end": 5}, "here"),
    ],
)
def test_mention_span_must_match_to_be_cut(span: dict[str, Any], expected: str) -> None:
    mention = part(type="file", mime="text/plain", source={"text": span})
    result = oc.classify_messages([msg("msg_1", part(type="text", text="@a.py here"), mention)],
                                  last_human_message_id=None)
    assert result.human[0][1].text == expected


def test_human_text_joins_visible_parts_and_normalizes() -> None:
    result = oc.classify_messages(
        [msg("msg_1", part(type="text", text=" first\n\tline "),
             part(type="text", text="hidden", synthetic=True),
             part(type="text", text="second"))],
        last_human_message_id=None)
    assert result.human == [("msg_1", Unit(human=True, reason="typed",
                                           text=normalize_text(" first\n\tline \nsecond"),
                                           occurred_at=1))]
    assert result.human[0][1].text == "first line second"


def test_only_messages_newer_than_the_marker_count() -> None:
    messages = [msg(f"msg_{n:03d}", part(type="text", text=f"turn {n}"), created=n)
                for n in range(1, 6)]
    result = oc.classify_messages(messages, last_human_message_id="msg_003")
    assert [(mid, u.reason) for mid, u in result.decisions] == [
        ("msg_001", "already_seen"), ("msg_002", "already_seen"), ("msg_003", "already_seen"),
        ("msg_004", "typed"), ("msg_005", "typed")]
    assert result.last_human_message_id == "msg_005"
    # Messages are ordered by (created, id) whatever order they come in.
    assert oc.classify_messages(list(reversed(messages)), last_human_message_id="msg_003") == (
        result)


@pytest.mark.parametrize(
    ("typed", "reason"),
    [
        ("[Inter-session message] from agent:main:other", "inter_session"),
        ("Continue this conversation using the OpenClaw transcript below.\n"
         "<conversation_history>…</conversation_history>", "reseed_envelope"),
        ("Sender (untrusted metadata):\n```json\n{}\n```\nhello", "openclaw_envelope"),
    ],
)
def test_gateway_envelopes_are_not_human_and_not_consumed(typed: str, reason: str) -> None:
    result = oc.classify_messages([msg("msg_1", part(type="text", text=typed))],
                                  last_human_message_id=None)
    assert [(u.human, u.reason) for _, u in result.decisions] == [(False, reason)]
    assert result.last_human_message_id is None


def test_replay_window_zero_disables_suppression() -> None:
    messages = [msg("msg_1", part(type="text", text="same"), created=1),
                msg("msg_2", part(type="text", text="same"), created=2)]
    assert len(oc.classify_messages(messages, last_human_message_id=None).human) == 1
    assert len(oc.classify_messages(messages, last_human_message_id=None,
                                    replay_window=0).human) == 2


def test_ids_are_ordered_across_the_48_bit_wrap() -> None:
    """POLICY: OpenCode ids wrap every 2**36 ms (next: 2028-10-17T20:04:31.872Z)."""
    wrap_ms = 27 * (1 << 36)
    before = oc_id("msg", wrap_ms - 5, 1)  # "msg_fffff…"
    after = oc_id("msg", wrap_ms + 5, 1)  # "msg_00000…"
    assert after < before  # plain string order gets this wrong
    messages = [
        msg(before, part(type="text", text="last turn before the wrap"), created=wrap_ms - 5),
        msg(after, part(type="text", text="first turn after the wrap"), created=wrap_ms + 5),
    ]
    result = oc.classify_messages(messages, last_human_message_id=before)
    assert [(u.human, u.reason) for _, u in result.decisions] == [
        (False, "already_seen"), (True, "typed")]
    assert result.last_human_message_id == after
    again = oc.classify_messages(messages, last_human_message_id=after)
    assert again.human == []
    assert again.last_human_message_id == after


_PART_KINDS = st.sampled_from([
    {"type": "text", "text": "typed"},
    {"type": "text", "text": "other words"},
    {"type": "text", "text": "hidden", "synthetic": True},
    {"type": "text", "text": "hidden", "ignored": True},
    {"type": "text", "text": SHELL_SENTINEL},
    {"type": "compaction", "auto": True},
    {"type": "file", "mime": "image/png", "filename": "x.png"},
    dict(SUBTASK),
])


@settings(max_examples=200, deadline=None)
@given(
    plan=st.lists(st.tuples(st.sampled_from(["user", "assistant"]),
                            st.lists(_PART_KINDS, max_size=3)), max_size=12),
    marker_at=st.integers(min_value=-1, max_value=12),
)
def test_consumed_messages_are_never_counted_again(
    plan: list[tuple[str, list[dict[str, Any]]]], marker_at: int
) -> None:
    messages = [
        msg(f"msg_{n:03d}", *(part(**p) for p in parts), role=role, created=n)
        for n, (role, parts) in enumerate(plan)
    ]
    marker = None if marker_at < 0 else f"msg_{marker_at:03d}"
    first = oc.classify_messages(messages, last_human_message_id=marker)

    assert [mid for mid, _ in first.decisions] == [m.id for m in messages]
    for mid, unit in first.human:
        assert marker is None or mid > marker
        assert unit.text
    if first.human:
        assert first.last_human_message_id is not None
        assert first.last_human_message_id >= first.human[-1][0]
    second = oc.classify_messages(messages, last_human_message_id=first.last_human_message_id)
    assert second.human == []
    assert second.last_human_message_id == first.last_human_message_id
