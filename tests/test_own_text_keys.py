"""Issue 25 item 9: own texts are stored as a keyed hash with a per-database secret.

An unsalted SHA-256 of a short or guessable text can be found by hashing
candidates. The stored value is now ``HMAC-SHA256(secret, sha256(text))``; the
comparison stays exact, and a database of an earlier schema is migrated with
its stored hashes re-keyed (both backends).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from actors import Gateway
from persistence import SCHEMA_VERSION, open_backend
from tests._upstream_rows import claude_assistant, claude_user
from tests.conftest import WATCHER, SignalLogDb

KEY = "agent:main:claude:own"
TEXT = "yes"  # short and guessable: the case an unsalted hash gives away


@contextmanager
def _raw(db: SignalLogDb) -> Iterator[Any]:
    """A writing connection of the test's backend (autocommit), closed after."""
    conn = open_backend(db.location).connect(writer=True)
    try:
        yield conn
    finally:
        conn.close()


def _stored(db: SignalLogDb) -> list[str]:
    with _raw(db) as conn:
        return [str(h) for (h,) in conn.execute(
            "SELECT text_hash FROM session_own_texts").fetchall()]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_bytes(claude_user("history") + claude_assistant("ok"))
    return path


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def _adopted(gw: Gateway, transcript: Path) -> None:
    assert gw.adopt(KEY, source="claude", path=transcript) is not None
    assert gw.watch(WATCHER, KEY)


def test_an_own_text_is_stored_keyed_and_still_recognised(
    open_gateway: Callable[..., Gateway], db: SignalLogDb, transcript: Path,
) -> None:
    gw = open_gateway()
    _adopted(gw, transcript)
    gw.note_own_text(KEY, TEXT)
    [stored] = _stored(db)
    assert stored != _sha(TEXT)  # no longer found by hashing "yes"
    assert len(stored) == 64
    _append(transcript, claude_user(TEXT))
    assert gw.scan_upstream() == []  # self-echo: exact as before
    _append(transcript, claude_user("no"))
    assert [e.kind for e in gw.scan_upstream()] == ["human_direct_message"]


def test_two_databases_key_the_same_text_differently(tmp_path: Path) -> None:
    stored = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.sqlite"
        with Gateway.open(path, monitor=False) as gw:
            gw.note_own_text(KEY, TEXT)
        stored += _stored(SignalLogDb("sqlite", path))
    assert len(set(stored)) == 2


def test_a_database_of_the_previous_schema_is_rekeyed_and_keeps_its_own_texts(
    open_gateway: Callable[..., Gateway], db: SignalLogDb, transcript: Path,
) -> None:
    gw = open_gateway()
    _adopted(gw, transcript)
    gw.note_own_text(KEY, TEXT)
    gw.close()
    with _raw(db) as conn:  # back to schema 3: no secret, the unsalted hash stored
        conn.execute("DROP TABLE ssa_secrets")
        conn.execute("DROP TABLE session_roles")  # schema 5's
        conn.execute("ALTER TABLE session_own_texts DROP COLUMN noted_at")  # schema 6's
        conn.execute("UPDATE session_own_texts SET text_hash = ?", (_sha(TEXT),))
        if db.name == "sqlite":
            conn.pragma("user_version", 3)
        else:
            conn.execute("UPDATE ssa_schema SET version = 3")
    assert _stored(db) == [_sha(TEXT)]
    gw = open_gateway()  # migrates to 4, 5, 6 and 7
    [stored] = _stored(db)
    assert stored != _sha(TEXT)
    _append(transcript, claude_user(TEXT))
    assert gw.scan_upstream() == []  # the text noted before the upgrade is still its own
    with _raw(db) as conn:
        version = (conn.pragma("user_version") if db.name == "sqlite"
                   else conn.execute("SELECT version FROM ssa_schema").get)
    assert int(version) == SCHEMA_VERSION == 7
