"""The per-database secret that keys the hashes of the gateway's own texts.

``note_own_text`` stores a hash of each text the gateway forwarded upstream,
so a turn that comes back (self-echo) is not reported as a person's. An
unsalted SHA-256 of a short or guessable text can be found by hashing
candidates; so the stored value is ``HMAC-SHA256(secret, sha256_hex(text))``
with a random 32-byte secret made when the database is created (or migrated
to schema version 4), kept in its ``ssa_secrets`` table. Comparisons stay
exact: an upstream text's SHA-256 is keyed the same way and looked up.

Keying the SHA-256 (not the text) lets the migration re-key the hashes that
were stored before, without the texts. What it protects against: a hash
value seen without the database (a log, an export, a copied table) and
precomputed dictionaries shared across databases. Someone holding the whole
database holds the secret too and can still test guesses one database at a
time.

Pure functions apart from :func:`read_secret` and :func:`make_secret`, which
run one statement on the caller's connection.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

__all__ = ["OWN_TEXT_SECRET", "keyed_hash", "make_secret", "read_secret",
           "rekey_own_texts"]

OWN_TEXT_SECRET = "own_text_hmac"  # noqa: S105 - the row's name, not a secret
"""The ``ssa_secrets`` row of the own-text key."""


def keyed_hash(secret: bytes, digest: str) -> str:
    """``HMAC-SHA256(secret, digest)`` as hex; ``digest`` itself when there is no secret."""
    if not secret:
        return digest
    return hmac.new(secret, digest.encode("ascii", "replace"), hashlib.sha256).hexdigest()


def read_secret(conn: Any) -> bytes:
    """The database's own-text secret (``b""`` when the table has none; caller's thread)."""
    value = conn.execute("SELECT secret FROM ssa_secrets WHERE name = ?",
                         (OWN_TEXT_SECRET,)).fetchone()
    return bytes(value[0]) if value is not None and value[0] is not None else b""


def make_secret(conn: Any) -> bytes:
    """Store a new random 32-byte own-text secret (inside the caller's migration)."""
    secret = secrets.token_bytes(32)
    conn.execute("INSERT INTO ssa_secrets (name, secret) VALUES (?, ?)",
                 (OWN_TEXT_SECRET, secret))
    return secret


def rekey_own_texts(conn: Any, secret: bytes) -> int:
    """Replace every stored unsalted own-text hash with its keyed form; returns how many."""
    rows = conn.execute(
        "SELECT session_key, agent_id, position, text_hash FROM session_own_texts").fetchall()
    for key, agent, position, digest in rows:
        conn.execute(
            "UPDATE session_own_texts SET text_hash = ? WHERE session_key = ? AND agent_id = ?"
            " AND position = ?", (keyed_hash(secret, str(digest)), key, agent, position))
    return len(rows)
