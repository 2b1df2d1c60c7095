"""Gemini CLI's ``logs.json`` entry and Qwen Code's ``runtime.json`` sidecar may land
after the session's first prompt row (review finding: such a session stayed
unmonitored for good). While the transcript changed less than
``EVIDENCE_GRACE_S`` ago a missing entry proves nothing: adoption waits, a scan
stops before the row; older, the session is program-driven as before. File ages
are set with ``os.utime``, never waited for."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest

from actors import Gateway
from actors.testing import GeminiSession, QwenSession, Reply, Typed
from actors.upstream.evidence import EVIDENCE_GRACE_S, evidence_may_follow
from actors.upstream.sources import find_source
from tests.conftest import WATCHER

GEMINI_SID = "4f0e1d2c-3b4a-4596-8778-695a4b3c2d1e"
QWEN_SID = "6b7c6f7e-1111-4222-8333-944455556666"


def _age(path: Path, seconds: float = 60.0) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def _gemini(tmp_path: Path) -> Path:
    chats = tmp_path / "gemini" / "proj" / "chats"
    chats.mkdir(parents=True)
    return chats / "session-2026-12-03T08-00-4f0e1d2c.jsonl"


def _log_late(session: Path, session_id: str) -> None:
    """The TUI's query log, written after the row (Gemini's un-awaited logMessage)."""
    logs = session.parent.parent / "logs.json"
    logs.write_text(json.dumps([{"sessionId": session_id, "messageId": 0, "type": "user",
                                 "message": "x", "timestamp": "2026-12-03T08:00:00.000Z"}]))


def _qwen(tmp_path: Path) -> Path:
    chats = tmp_path / "qwen" / "-work-proj" / "chats"
    chats.mkdir(parents=True)
    return chats / f"{QWEN_SID}.jsonl"


def _sidecar_late(session: Path) -> None:
    session.with_name(f"{QWEN_SID}.runtime.json").write_text(json.dumps(
        {"schema_version": 1, "pid": 1, "session_id": QWEN_SID, "work_dir": "/work/proj"}))


def _headless(tool: str, tmp_path: Path) -> GeminiSession | QwenSession:
    """A session written without the interactive UI's evidence (as ``-p`` writes it)."""
    if tool == "gemini":
        return GeminiSession(_gemini(tmp_path), session_id=GEMINI_SID, interactive=False)
    return QwenSession(_qwen(tmp_path), session_id=QWEN_SID, interactive=False)


def _evidence_lands(tool: str, path: Path) -> None:
    """The evidence written after the row: Gemini's query log, Qwen's sidecar."""
    if tool == "gemini":
        _log_late(path, GEMINI_SID)
    else:
        _sidecar_late(path)


def test_the_grace_is_measured_from_the_transcripts_last_change(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("{}\n")
    now = time.time()
    assert evidence_may_follow(str(path), now_s=now)
    assert not evidence_may_follow(str(path), now_s=now + EVIDENCE_GRACE_S + 1)
    assert not evidence_may_follow(str(tmp_path / "missing.jsonl"))


@pytest.mark.parametrize("tool", ["gemini", "qwen"])
def test_a_session_seen_before_its_evidence_is_adopted_once_the_evidence_lands(
        gateway: Gateway, tmp_path: Path, tool: str) -> None:
    builder = _headless(tool, tmp_path)
    path = builder.path
    builder.append(Typed("typed in the TUI"), Reply("ok"))
    reading = find_source(tool).reading()  # type: ignore[union-attr]
    key = f"agent:main:{tool}:late"
    assert gateway.adopt(key, source=tool, path=path) is None
    assert reading.waiting(str(path))  # ssa watch adopts it again at the next interval
    assert gateway.session_status(key).state_version == 0  # nothing recorded: not refused
    _evidence_lands(tool, path)
    assert not reading.waiting(str(path))
    assert gateway.adopt(key, source=tool, path=path) is not None


@pytest.mark.parametrize("tool", ["gemini", "qwen"])
def test_an_old_session_without_evidence_is_still_program_driven(
        gateway: Gateway, tmp_path: Path, tool: str) -> None:
    builder = _headless(tool, tmp_path)
    path = builder.path
    builder.append(Typed("-p"))
    _age(path)
    key = f"agent:main:{tool}:old"
    assert gateway.adopt(key, source=tool, path=path) is None
    assert not find_source(tool).reading().waiting(str(path))  # type: ignore[union-attr]
    assert gateway.session_status(key).state_version > 0  # adopted without a link


@pytest.mark.parametrize("tool", ["gemini", "qwen"])
def test_a_first_prompt_logged_after_its_row_counts_once(
        gateway: Gateway, tmp_path: Path, tool: str, caplog: pytest.LogCaptureFixture) -> None:
    builder = _headless(tool, tmp_path)
    path = builder.path
    builder.append(Reply("ready"))  # no prompt yet and no evidence: undecided while young
    key = f"agent:main:{tool}:first"
    assert gateway.adopt(key, source=tool, path=path) is None
    assert find_source(tool).reading().waiting(str(path))  # type: ignore[union-attr]
    _age(path)  # idle past the grace: nothing tells it from a UI session, so it is linked
    assert gateway.adopt(key, source=tool, path=path) is not None
    assert gateway.watch(WATCHER, key)
    builder.append(Typed("the first prompt, typed"))
    with caplog.at_level(logging.INFO, logger="actors.monitors.link_monitor"):
        assert gateway.scan_upstream() == []  # its evidence may follow: the row waits
    # Review finding: this routine wait was a WARNING that the line was not JSON.
    waits = [r for r in caplog.records if "waits before a" in r.getMessage()]
    assert [(r.levelno, r.getMessage().split("(")[1].split(")")[0]) for r in waits] == [
        (logging.INFO, f"{'logs' if tool == 'gemini' else 'sidecar'}_pending")]
    assert not [r for r in caplog.records if "not a JSON object" in r.getMessage()]
    _evidence_lands(tool, path)
    events = gateway.scan_upstream()
    assert [(e.kind, (e.payload or {}).get("turns", 1)) for e in events] == [
        ("human_direct_message", 1)]  # one turn (no payload says more)
    assert gateway.scan_upstream() == []


@pytest.mark.parametrize("tool", ["gemini", "qwen"])
def test_a_prompt_whose_evidence_never_came_is_program_driven_once_old(
        gateway: Gateway, tmp_path: Path, tool: str) -> None:
    builder = _headless(tool, tmp_path)
    path = builder.path
    builder.append(Reply("ready"))
    _age(path)  # idle past the grace with no prompt: linked
    key = f"agent:main:{tool}:never"
    assert gateway.adopt(key, source=tool, path=path) is not None
    assert gateway.watch(WATCHER, key)
    builder.append(Typed("sent by a program"))
    assert gateway.scan_upstream() == []
    _age(path)
    assert gateway.scan_upstream() == []  # decided program_driven now, not counted
    builder.append(Reply("more"))
    _age(path)
    assert gateway.scan_upstream() == []


@pytest.mark.parametrize("tool", ["gemini", "qwen"])
def test_an_image_only_prompt_is_written_and_does_not_count(
        gateway: Gateway, tmp_path: Path, tool: str) -> None:
    """Review finding: these two builders refused ``ImageOnly`` (docs/testing-your-gateway.md says
    every builder takes it)."""
    from actors.testing import ImageOnly

    if tool == "gemini":
        path = _gemini(tmp_path)
        builder: GeminiSession | QwenSession = GeminiSession(path, session_id=GEMINI_SID)
    else:
        path = _qwen(tmp_path)
        builder = QwenSession(path)  # the id defaults to the file's name, as Qwen names it
        assert builder.session_id == QWEN_SID
    builder.append(Reply("ready"))
    _age(path)  # a UI session idle past the grace before its first prompt
    key = f"agent:main:{tool}:image"
    assert gateway.adopt(key, source=tool, path=path) is not None
    assert gateway.watch(WATCHER, key)
    builder.append(ImageOnly(2), Reply("a picture"))
    assert gateway.scan_upstream() == []
    builder.append(Typed("and now words"))
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]
