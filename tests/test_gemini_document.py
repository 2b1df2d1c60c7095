"""Gemini CLI's older session documents (``chats/session-*.json``, 0.38 and before) as a
source: discovery, adoption, scans by message, rewrites, ``ssa classify``; and the history
0.39+ copies into ``.jsonl`` when it converts one (docs/upstream-gemini.md, "Formats")."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import msgspec
import pytest

from actors import Gateway
from actors.cli import app as cli
from actors.testing import (
    Compaction,
    GeminiSession,
    ImageOnly,
    Interrupt,
    Reply,
    SlashCommand,
    SubagentRow,
    ToolCall,
    ToolResult,
    Typed,
)
from actors.upstream.catalog import discover
from actors.upstream.gemini import classify as g
from actors.upstream.gemini.document import decode_document, match_keys
from actors.upstream.gemini.kit import type_turn
from actors.upstream.gemini.source import GEMINI
from actors.upstream.kit.turns import Turn
from actors.upstream.source import Candidate
from tests.conftest import WATCHER

KEY = "agent:main:gemini:d1"
VERSIONS = ["0.20.0", "0.27.0", "0.28.0", "0.30.0", "0.37.1", "0.38.2"]
"""Releases of the last 12 months that wrote documents: string content before 0.28, parts
and ``displayContent`` from 0.28, ``kind`` from 0.31."""


def _age(path: Path, seconds: float = 60.0) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def _chats(root: Path, name: str = "proj") -> Path:
    chats = root / name / "chats"
    chats.mkdir(parents=True)
    (root / name / ".project_root").write_text(f"/work/{name}")
    return chats


def _doc(chats: Path, version: str = "0.37.1", stem: str = "session-2026-04-01T08-00-aaaa1111",
         **kw: object) -> GeminiSession:
    return GeminiSession(chats / f"{stem}.json", format="json", version=version, **kw)  # type: ignore[arg-type]


def _adopt(gateway: Gateway, path: Path, key: str = KEY) -> None:
    link = gateway.adopt(key, source="gemini", path=path)
    assert link is not None
    assert (link.source, link.thread_id) == ("gemini", path.stem)
    assert gateway.watch(WATCHER, key)
    assert gateway.scan_upstream() == []  # adopted at the end: nothing earlier counts


def _turns(gateway: Gateway) -> int:
    """Typed turns the scan reported (a notice's ``turns``, else 1 per notice)."""
    total = 0
    for event in gateway.scan_upstream():
        assert event.kind == "human_direct_message"
        total += (event.payload or {}).get("turns", 1)
    return total


def test_the_kit_writes_each_versions_document_shape(tmp_path: Path) -> None:
    chats = _chats(tmp_path)
    old = _doc(chats, "0.20.0", stem="session-a")
    old.append(Typed("hello"), Reply("hi"), ToolCall("run_shell_command", {"command": "ls"}, "c1"),
               ToolResult("c1", "a b"))
    doc = json.loads(old.path.read_bytes())
    assert set(doc) == {"sessionId", "projectHash", "startTime", "lastUpdated", "messages"}
    assert [(m["type"], m["content"]) for m in doc["messages"]] == [
        ("user", "hello"), ("gemini", "hi")]  # the result lives in the call: no user row
    assert doc["messages"][1]["toolCalls"][0]["result"][0]["functionResponse"]["id"] == "c1"
    new = _doc(chats, "0.38.2", stem="session-b", hook_context="ctx")
    before = new.lines(Typed("shown only"))  # lines() writes nothing, logs.json included
    assert not new.path.exists()
    assert b"shown only" in before
    new.append(Typed("typed"))
    doc = json.loads(new.path.read_bytes())
    assert doc["kind"] == "main"
    assert doc["messages"][0]["displayContent"] == [{"text": "typed"}]
    assert b"shown only" not in (chats.parent / "logs.json").read_bytes()
    again = GeminiSession(new.path, format="json")  # a new builder goes on with the document
    assert again.session_id == new.session_id
    again.append(Reply("ok"))
    assert len(json.loads(new.path.read_bytes())["messages"]) == 2
    with pytest.raises(ValueError, match="format"):
        GeminiSession(chats / "x.json", format="yaml")


def test_discovery_finds_documents_beside_jsonl_but_not_converted_ones(tmp_path: Path) -> None:
    root = tmp_path / "tmp"
    chats = _chats(root)
    document = _doc(chats, stem="session-2026-04-01T08-00-aaaa1111")
    document.append(Typed("old"))
    converted = _doc(chats, stem="session-2026-04-01T09-00-bbbb2222")
    converted.append(Typed("resumed later"))
    (chats / "session-2026-04-01T09-00-bbbb2222.jsonl").write_bytes(b"{}\n")
    (chats / "parent-id").mkdir()
    (chats / "parent-id" / "agent.json").write_bytes(b"{}")  # a sub-agent's file
    found = list(discover("gemini", root))
    assert found == [
        Candidate(source="gemini", path=str(document.path), thread_id=document.path.stem),
        Candidate(source="gemini", path=str(chats / "session-2026-04-01T09-00-bbbb2222.jsonl"),
                  thread_id="session-2026-04-01T09-00-bbbb2222")]
    assert list(discover("gemini", chats)) == found


def _script(version: str) -> list[tuple[list[Turn], int]]:
    """``(turns, typed turns among them)`` for one document session, in order."""
    parts = tuple(int(p) for p in version.split(".")) >= (0, 28)
    return [
        ([Typed("please add a test")], 1),
        ([Reply("on it"), ToolCall("run_shell_command", {"command": "ls"}, "c1")], 0),
        ([ToolResult("c1", "a b"), Reply("done")], 0),
        ([SubagentRow("")], 0),  # "Please continue." on the person's behalf
        ([Interrupt()], 0),
        # A person typed it, but before 0.28 the document holds only its expansion, which
        # logs.json ("/review the diff") does not: not counted (a known recall gap).
        ([SlashCommand("review", "the diff")], 1 if parts else 0),
        ([SlashCommand("deploy")], 0),  # a custom command without arguments
        ([Compaction("summary")], 0),
        ([ImageOnly(1)], 0),
        ([Typed("one"), Reply("1"), Typed("two")], 2),
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_typed_turns_in_a_document_count_and_nothing_else_does(
        gateway: Gateway, tmp_path: Path, version: str) -> None:
    chats = _chats(tmp_path)
    session = _doc(chats, version)
    session.append(Typed("before adoption"), Reply("ok"))
    _adopt(gateway, session.path)
    expected = found = hits = 0
    for turns, typed in _script(version):
        session.append(*turns)
        _age(session.path)  # an unlogged prompt (a command's expansion before 0.28) waits
        got = _turns(gateway)
        expected, found, hits = expected + typed, found + got, hits + min(got, typed)
        assert got == typed, (turns, got)
    assert expected == found == hits  # precision = recall = 1.0
    assert expected >= 3


def test_a_user_message_the_tui_never_logged_does_not_count(
        gateway: Gateway, tmp_path: Path) -> None:
    chats = _chats(tmp_path)
    session = _doc(chats, "0.30.0")
    session.append(Typed("first"), Reply("ok"))
    _adopt(gateway, session.path)
    # Before 0.31 a sub-agent's chat was recorded under the parent's session id, in
    # the same file when the minute matched: the session is logged, this text is not.
    agent = GeminiSession(session.path, format="json", interactive=False)
    agent.append(Typed("Investigate the code base and report"))
    _age(session.path)
    assert _turns(gateway) == 0
    type_turn(str(session.path), session.path.stem, "typed again")  # goes on with the file
    assert _turns(gateway) == 1
    rows = [msgspec.json.decode(line) for line in _classify(session.path)]
    assert [r["reason"] for r in rows if r["reason"] in ("not_logged", "typed")] == [
        "typed", "not_logged", "typed"]


def test_a_program_driven_document_gets_no_link(gateway: Gateway, tmp_path: Path) -> None:
    chats = _chats(tmp_path)
    driven = _doc(chats, interactive=False)
    driven.append(Typed("gemini -p prompt"), Reply("ok"))
    assert GEMINI.reading().baseline(str(driven.path), None, False, 0) is None  # may be logged
    _age(driven.path)
    assert gateway.adopt(KEY, source="gemini", path=driven.path) is None
    subagent = _doc(chats, stem="session-2026-04-01T08-01-cccc3333", kind="subagent")
    subagent.append(Typed("the parent model's prompt"))
    found = GEMINI.reading().baseline(str(subagent.path), None, False, 0)
    assert found is not None
    assert found.refusal == "subagent"


def test_a_rewrite_does_not_report_again_and_loses_no_new_turn(
        gateway: Gateway, tmp_path: Path) -> None:
    chats = _chats(tmp_path)
    session = _doc(chats)
    session.append(Typed("first"), Reply("ok"))
    _adopt(gateway, session.path)
    session.append(Typed("second"), Reply("ok"), Typed("third"), Reply("ok"))
    assert _turns(gateway) == 2
    document = session.document
    assert document is not None
    document.messages[1]["content"] = "ok (edited)"  # an earlier message changed in place
    document.write()
    assert _turns(gateway) == 0
    document.rewind(4)  # /rewind to before "third": the marker's message is gone
    assert _turns(gateway) == 0
    session.append(Typed("fourth"))
    assert _turns(gateway) == 1
    document.rewind(2)  # rewound past the anchor, then typed, within one scan
    session.append(Typed("fifth"), Reply("ok"))
    assert _turns(gateway) == 1
    document.messages.insert(0, dict(document.messages[0], id="copied"))  # an old copy
    document.write()
    assert _turns(gateway) == 0
    assert len(gateway.pending_notices(WATCHER)) == 1


def test_a_document_being_rewritten_waits_and_one_too_large_is_refused(
        gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chats = _chats(tmp_path)
    session = _doc(chats)
    session.append(Typed("first"))
    whole = session.path.read_bytes()
    reading = GEMINI.reading()
    session.path.write_bytes(whole[:40])  # writeFileSync caught half-way
    assert reading.baseline(str(session.path), None, False, 0) is None
    assert reading.waiting(str(session.path))
    session.path.write_bytes(whole)
    assert not reading.waiting(str(session.path))
    _adopt(gateway, session.path)
    session.append(Typed("second"))
    full = session.path.read_bytes()
    session.path.write_bytes(full[:-30])
    assert _turns(gateway) == 0  # stopped:incomplete, read again
    session.path.write_bytes(full)
    assert _turns(gateway) == 1
    monkeypatch.setattr("actors.upstream.gemini.docreading.DOC_LIMIT", 100)
    found = reading.baseline(str(session.path), None, False, 0)
    assert found is not None
    assert found.refusal == "document_too_large"
    session.append(Typed("third"))
    assert _turns(gateway) == 0  # stopped:document_too_large (never counted, never guessed)


def _classify(path: Path) -> list[str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["classify", "--source", "gemini", str(path)]) == 0
    return out.getvalue().splitlines()


def test_classify_shows_each_messages_decision(tmp_path: Path) -> None:
    chats = _chats(tmp_path)
    session = _doc(chats)
    session.append(Typed("hello"), Reply("hi"), Interrupt(), SlashCommand("deploy"))
    rows = [msgspec.json.decode(line) for line in _classify(session.path)]
    assert [(r["line"], r["human"], r["reason"]) for r in rows] == [
        (0, True, "typed"), (1, False, "model"), (2, False, "info"), (3, False, "custom_command")]


def _converted(chats: Path, stem: str) -> tuple[Path, str]:
    """What 0.39+ leaves when it resumes an older document: ``<stem>.jsonl`` holding the
    old header (its ``lastUpdated`` kept), every old message as a plain row, then the
    ``$set`` of the session id (``ChatRecordingService.initialize``)."""
    old = _doc(chats, stem=stem)
    old.append(Typed("typed long ago"), Reply("ok"), Typed("also long ago"))
    doc = json.loads(old.path.read_bytes())
    head = {k: doc[k] for k in ("sessionId", "projectHash", "startTime", "lastUpdated", "kind")}
    rows = [head, *doc["messages"], {"$set": {"sessionId": doc["sessionId"]}}]
    path = chats / f"{stem}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, doc["sessionId"]


def test_history_copied_into_a_converted_jsonl_is_not_typed(
        gateway: Gateway, tmp_path: Path) -> None:
    chats = _chats(tmp_path)
    path, _ = _converted(chats, "session-2026-04-01T08-00-eeee5555")
    found = GEMINI.reading().baseline(str(path), None, True, 0)  # read from its start
    assert found is not None
    assert found.refusal is None
    link = gateway.adopt(KEY, source="gemini", path=path, from_start=True)
    assert link is not None
    assert gateway.watch(WATCHER, KEY)
    assert gateway.scan_upstream() == []
    type_turn(str(path), path.stem, "typed after the resume")
    assert _turns(gateway) == 1
    decided = g.decide_rows(path.read_bytes()).rows
    assert [r.reason for r in decided if r.kind == "user"] == [
        "copied_history", "copied_history", "typed"]


def test_decisions_on_their_own() -> None:
    assert g.decide_user_message({"content": [{"text": "System: Please continue."}]})[1] == (
        "continuation")  # 0.38's recovery after an invalid stream, no displayContent
    assert match_keys("fix it\n--- Content from referenced files ---\nx", None) == (
        "fix it --- Content from referenced files --- x", "fix it")
    assert decode_document(b'{"sessionId": "s", "projectHash": "h", "messages": [') == (
        "incomplete")
    assert decode_document(b'{"sessionId": "s", "messages": []}') == "not_a_session"
    assert decode_document(b'{"sessionId": "s", "projectHash": "h", "messages": [1]}') == (
        "not_a_session")
    doc = decode_document(b'{"sessionId": "s", "projectHash": "h", "messages": ['
                          b'{"id": "1", "type": "note", "content": "x"}]}')
    assert not isinstance(doc, str)
    assert doc.unknown_kinds == ("note",)
    assert doc.messages[0].reason == "unknown_kind"


def test_watch_adopts_a_document_and_reports_its_typed_turns(tmp_path: Path) -> None:
    import io

    from actors.cli.watch import run_watch

    root = tmp_path / "gemini"
    session = _doc(_chats(root), "0.37.1")
    session.append(Typed("before the watch"), Reply("ok"))
    args = cli._parser().parse_args(["watch", "--gemini", str(root), "--scans", "2", "--json",
                                     "--interval", "0.001", "--db", str(tmp_path / "s.db")])

    class TypeOnAdopt(io.StringIO):
        def write(self, text: str) -> int:
            if text.startswith('{"adopted"'):
                for typed in ("one", "two"):
                    type_turn(str(session.path), session.path.stem, typed)
            return super().write(text)

    out = TypeOnAdopt()
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    summary, *records = (msgspec.json.decode(line) for line in out.getvalue().splitlines())
    assert summary["adopted"] == {"gemini": 1}
    assert [(e["kind"], e.get("payload")) for r in records for e in r["events"]] == [
        ("human_direct_message", {"turns": 2})]
