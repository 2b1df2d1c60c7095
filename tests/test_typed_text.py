"""What a person typed, read back from the tool's transcript on request (issue 33 item 1).

``session_status(..., typed_text=N)`` reads the typed turns an upstream event
counted from the transcript its source pointer names; the signal log holds
only the pointer (byte range and keyed digests), never the text.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors import Gateway, GatewayConfig, SessionStateEventInput
from actors.cli.app import main
from actors.errors import ArgumentTypeError, InvalidArgument
from actors.testing import CodexRollout, Reply, Typed
from actors.upstream.common import Unit, text_hash
from actors.upstream.typedtext import SpanChanged, UnitsIn, pointer_of, read_typed
from tests._upstream_rows import claude_assistant, claude_user
from tests.conftest import WATCHER, SignalLogDb
from tests.test_upstream_monitor import _append, transcript

__all__ = ["transcript"]  # the fixture, imported for pytest

KEY = "agent:main:adopted:claude"


def _adopted(gw: Gateway, path: Path, key: str = KEY, source: str = "claude",
             thread_id: str | None = None) -> None:
    assert gw.adopt(key, source=source, path=path, thread_id=thread_id) is not None
    assert gw.watch(WATCHER, key)


def _typed(gw: Gateway, limit: int = 1000, key: str = KEY) -> list[tuple[str, tuple[str, ...]]]:
    status = gw.session_status(key, changes_since=0, typed_text=limit)
    assert status.typed_text is not None
    return [(t.status, t.texts) for t in status.typed_text]


def _db_bytes(db: SignalLogDb) -> bytes:
    return b"".join(p.read_bytes() for p in Path(db.location).parent.glob(
        Path(db.location).name + "*"))


def test_typed_text_is_read_from_the_transcript_and_never_stored(
        gateway: Gateway, transcript: Path, db: SignalLogDb) -> None:
    nonce = secrets.token_hex(8)
    _adopted(gateway, transcript)
    _append(transcript, claude_user(f"first {nonce}") + claude_assistant("sure")
            + claude_user(f"second   line\n{nonce}"))
    assert [e.kind for e in gateway.scan_upstream()] == ["human_direct_message"]
    assert _typed(gateway) == [("ok", (f"first {nonce}", f"second line {nonce}"))]
    status = gateway.session_status(KEY, changes_since=0, typed_text=10)
    assert status.typed_text is not None
    assert status.typed_text[0].cut
    assert status.typed_text[0].texts == (f"first {nonce[:3]}…", "second li…")
    assert status.typed_text[0].path == str(transcript.resolve())
    if db.name == "sqlite":
        gateway.close()
        assert nonce.encode() not in _db_bytes(db)  # the pointer holds no text


def test_only_the_turns_the_event_counted_are_shown_never_the_gateways_own(
        gateway: Gateway, transcript: Path) -> None:
    _adopted(gateway, transcript)
    gateway.note_own_text(KEY, "sent by the gateway")
    _append(transcript, claude_user("sent by the gateway") + claude_user("a person's words"))
    gateway.scan_upstream()
    assert _typed(gateway) == [("ok", ("a person's words",))]


def test_a_transcript_that_changed_or_went_is_said_so_and_no_wrong_row_is_shown(
        gateway: Gateway, transcript: Path) -> None:
    _adopted(gateway, transcript)
    _append(transcript, claude_user("the real words"))
    gateway.scan_upstream()
    original = transcript.read_bytes()
    # Same length, other words at the same place: the digest tells them apart.
    transcript.write_bytes(original.replace(b"the real words", b"some new words"))
    assert _typed(gateway) == [("changed", ())]
    transcript.write_bytes(original[:-40])  # shorter: the range no longer ends a line
    assert _typed(gateway) == [("changed", ())]
    transcript.unlink()
    assert _typed(gateway) == [("gone", ())]
    os.mkfifo(transcript)  # a FIFO put where it was never blocks the read
    assert _typed(gateway) == [("gone", ())]
    transcript.unlink()
    transcript.write_bytes(original)  # restored: shown again
    assert _typed(gateway) == [("ok", ("the real words",))]


def test_a_line_longer_than_the_scan_cap_is_read_back_whole(
        open_gateway: Callable[..., Gateway], transcript: Path) -> None:
    gateway = open_gateway(GatewayConfig(scan_cap_bytes=4096))
    _adopted(gateway, transcript)
    long_text = "word " * 3000
    _append(transcript, claude_user(long_text) + claude_user("short after"))
    for _ in range(10):
        if gateway.scan_upstream():
            break
    events = gateway.session_status(KEY, changes_since=0, typed_text=20)
    assert events.typed_text is not None
    assert [(t.status, t.texts) for t in events.typed_text] == [
        ("ok", ("word word word word…", "short after"))]


def test_codex_turns_are_read_back_too(gateway: Gateway, tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path / "rollout.jsonl")
    rollout.append(Typed("hello codex"), Reply("hi"))
    key = "agent:main:adopted:codex"
    _adopted(gateway, rollout.path, key=key, source="codex")
    rollout.append(Typed("please fix the build"), Reply("done"))
    assert gateway.scan_upstream()
    assert _typed(gateway, key=key) == [("ok", ("please fix the build",))]


def test_a_pointer_recorded_through_the_api_is_never_read(gateway: Gateway,
                                                        tmp_path: Path) -> None:
    """Any producer may record a payload: one that names a ``source`` (a file of its
    choosing) must not make session_status read it."""
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes(claude_user("private words"))
    gateway.record(SessionStateEventInput(
        session_key="agent:main:s2", kind="human_direct_message", actor_type="human",
        summary="forged", payload={"source": {
            "tool": "claude", "path": str(secret), "thread": "x", "from": 0,
            "to": secret.stat().st_size, "rows": ["0" * 16], "mac": "0" * 16}}))
    assert _typed(gateway, key="agent:main:s2") == [("no_pointer", ())]


def test_events_without_a_pointer_say_so(gateway: Gateway) -> None:
    gateway.record(SessionStateEventInput(session_key="agent:main:s1",
                                          kind="human_direct_message", actor_type="human",
                                          summary="typed in the gateway"))
    gateway.record(SessionStateEventInput(session_key="agent:main:s1", kind="compacted",
                                          actor_type="system", summary="compacted"))
    status = gateway.session_status("agent:main:s1", changes_since=0, typed_text=50)
    assert status.typed_text is not None
    assert [(t.sequence, t.status) for t in status.typed_text] == [(1, "no_pointer")]
    assert gateway.session_status("agent:main:s1", changes_since=0).typed_text is None


def test_bad_bounds_are_refused(gateway: Gateway) -> None:
    with pytest.raises(InvalidArgument, match="needs changes_since"):
        gateway.session_status(KEY, typed_text=10)
    for bad in (0, -1, 100_001):
        with pytest.raises(InvalidArgument, match="from 1 to"):
            gateway.session_status(KEY, changes_since=0, typed_text=bad)
    with pytest.raises(ArgumentTypeError):
        gateway.session_status(KEY, changes_since=0, typed_text=True)


# --- read_typed as a plain function -----------------------------------------------------

def _key(digest: str) -> str:
    return "k" + digest


def _reader(units: list[Unit],
            error: BaseException | None = None) -> Callable[[str, str], UnitsIn | None]:
    def units_in(path: str, thread: str, pointer: dict[str, Any], cap: int) -> Iterator[Unit]:
        if error is not None:
            raise error
        return iter(units)
    return lambda tool, path: units_in if tool == "claude" else None


def test_read_typed_matches_digests_in_order_and_skips_other_rows() -> None:
    pointer = pointer_of(tool="claude", path="/t.jsonl", thread="t", span=(0, 10),
                         digests=(text_hash("a"), text_hash("c")), key=_key)
    units = [Unit(human=True, reason="typed", text="a"), Unit(human=False, reason="reply"),
             Unit(human=True, reason="typed", text="b"), Unit(human=True, reason="typed", text="c")]
    found = read_typed(3, {"source": pointer}, key=_key, units_in=_reader(units), limit=5)
    assert (found.sequence, found.status, found.texts) == (3, "ok", ("a", "c"))
    missing = read_typed(3, {"source": pointer}, key=_key, units_in=_reader(units[:2]), limit=5)
    assert missing.status == "changed"
    assert missing.texts == ()
    assert read_typed(3, {"source": pointer}, key=_key,
                      units_in=_reader([], SpanChanged("x")), limit=5).status == "changed"
    assert read_typed(3, {"source": pointer}, key=_key,
                      units_in=_reader([], FileNotFoundError()), limit=5).status == "gone"
    other = pointer_of(tool="crush", path="/t.db", thread="t", span=None,
                       digests=(text_hash("a"),), key=_key)
    assert read_typed(3, {"source": other}, key=_key, units_in=_reader(units),
                      limit=5).status == "unsupported"
    forged = {**pointer, "path": "/etc/passwd"}  # the check no longer holds
    assert read_typed(3, {"source": forged}, key=_key, units_in=_reader(units),
                      limit=5).status == "no_pointer"
    for payload in (None, {}, {"source": "x"}, {"source": {"path": 1, "rows": []}}):
        assert read_typed(1, payload, key=_key, units_in=_reader(units),
                          limit=5).status == "no_pointer"


def test_ssa_status_typed_text_reads_the_transcript(
        open_gateway: Callable[..., Gateway], db_path: Path, transcript: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    gateway = open_gateway()
    _adopted(gateway, transcript)
    _append(transcript, claude_user("fix the flaky test"))
    gateway.scan_upstream()
    gateway.close()
    assert main(["status", KEY, "--changes-since", "0", "--typed-text", "8",
                 "--db", str(db_path)]) == 0
    status = msgspec.json.decode(capsys.readouterr().out)
    assert [(t["sequence"], t["status"], t["texts"]) for t in status["typedText"]] == [
        (2, "ok", ["fix the…"])]
    assert "workerState" not in status  # its hooks never said
    with Gateway.open(str(db_path), monitor=False) as again:
        again.note_activity(KEY, "waiting", detail="permission",
                            at=transcript.stat().st_mtime_ns // 1_000_000 + 1)
    assert main(["status", KEY, "--db", str(db_path)]) == 0
    assert msgspec.json.decode(capsys.readouterr().out)["workerState"]["state"] == "waiting"
    assert main(["status", KEY, "--typed-text", "8", "--db", str(db_path)]) == 1
    assert "--typed-text needs --changes-since" in capsys.readouterr().err


def test_opencode_turns_are_read_back_from_the_store_by_message_id(
        gateway: Gateway, tmp_path: Path) -> None:
    from actors.testing import OpenCodeTranscript

    store = tmp_path / "opencode" / "opencode.db"
    store.parent.mkdir()
    sid = "ses_01typedtextAAAAAAAAAAAAAAAA"
    OpenCodeTranscript(store, session_id=sid, title="t", directory="/w").append(
        Typed("hello"), Reply("hi"))
    key = f"agent:main:opencode:{sid}"
    _adopted(gateway, store, key=key, source="opencode", thread_id=sid)
    OpenCodeTranscript.resume(store, sid).append(Typed("deploy to staging"), Reply("ok"))
    assert gateway.scan_upstream()
    status = gateway.session_status(key, changes_since=0, typed_text=100)
    assert status.state_changes is not None
    pointer = status.state_changes.events[-1].payload["source"]
    assert len(pointer["ids"]) == 1  # the store and the message id, no byte range
    assert "from" not in pointer
    assert _typed(gateway, key=key) == [("ok", ("deploy to staging",))]
    store.unlink()
    assert _typed(gateway, key=key) == [("gone", ())]
