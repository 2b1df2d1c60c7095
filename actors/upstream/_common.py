"""What every upstream classifier returns, and the shared text normalization.

A classifier looks at one unit of an upstream transcript (a JSONL line, or an
OpenCode message) and decides whether a person typed it. Classifiers are pure
functions: no I/O, thread-safe, non-blocking; the upstream monitor does the
reading. Text is carried only in memory, for self-echo and replay checks; it
never enters the signal log or the logs.
"""

from __future__ import annotations

import hashlib

import msgspec

__all__ = ["Unit", "normalize_text", "text_hash"]


class Unit(msgspec.Struct, frozen=True, kw_only=True):
    """One classified unit of an upstream transcript.

    Attributes:
        human: a person typed this turn directly into the upstream tool.
        reason: a short snake_case code saying why (for ``ssa classify`` and
            tests), e.g. ``"typed"``, ``"tool_result"``, ``"meta"``.
        text: the normalized typed text (``human`` units only), used to
            recognise the gateway's own texts; never stored or logged.
        occurred_at: when the turn happened, epoch ms, if the row says.
        stop: the unit cannot be classified and classification must stop
            before it (Pi: a line that is not a JSON object); the cursor never
            passes it.
    """

    human: bool
    reason: str
    text: str | None = None
    occurred_at: int | None = None
    stop: bool = False


def normalize_text(text: str | None) -> str:
    """Trim and collapse every whitespace run to one space (anchor §3.16 step 2b)."""
    return " ".join(text.split()) if text else ""


def text_hash(text: str | None) -> str:
    """SHA-256 hex of the normalized text: what is stored for own texts."""
    return hashlib.sha256(normalize_text(text).encode("utf-8", "surrogatepass")).hexdigest()
