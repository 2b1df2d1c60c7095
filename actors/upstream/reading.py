"""The heavy half of a :class:`~actors.upstream.source.Source`: how its sessions are read.

A :class:`Reading` is a frozen record of functions; a source module builds
one (line sources with :func:`actors.upstream.jsonl.line_reading`) and
returns it from its ``reading()``. The generic code calls these fields and
nothing else of a source. Every function runs in its caller's thread.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from actors.errors import SessionStateError
from actors.upstream.common import OwnTexts
from actors.upstream.files import file_state
from actors.upstream.scanning import (
    LONG_LINE_MAX_BYTES,
    LineClassifier,
    PendingLine,
    ScanResult,
    StoreHint,
)
from actors.upstream.typedtext import UnitsIn

__all__ = ["SHOWN_IDS", "Baseline", "Reading", "ScanContext", "could_not_read",
           "never_waiting", "pick_one", "readable", "source_key_of"]

Marker = dict[str, Any]


class Baseline(msgspec.Struct, frozen=True, kw_only=True):
    """A new link's identity and starting marker, or why it gets no link.

    Attributes:
        host_id: ``"gateway:local"`` for files on this machine.
        thread_id: the upstream session or thread id.
        upstream_ref: where to read (``{"path": ...}`` plus ``sessionId`` for OpenCode).
        marker: the starting scan position.
        refusal: set when the source is adopted without a link (legacy Pi
            format, a Codex thread not started by a user, an OpenCode child
            session); ``None`` when it may be monitored.
        note: linked, but why its turns are not a person's (a session a
            program prompts, ``claude -p``): a reason code ``ssa list`` shows.
    """

    host_id: str
    thread_id: str
    upstream_ref: dict[str, Any]
    marker: dict[str, Any]
    refusal: str | None = None
    note: str | None = None


def source_key_of(host_id: str, thread_id: str, upstream_ref: dict[str, Any]) -> str:
    """16 hex digits of sha256(host \\0 thread \\0 ref JSON) (anchor §3.16)."""
    ref = msgspec.json.encode(upstream_ref, order="sorted")
    digest = hashlib.sha256(host_id.encode() + b"\0" + thread_id.encode() + b"\0" + ref)
    return digest.hexdigest()[:16]


class ScanContext(NamedTuple):
    """What a scan of one link is given besides its marker.

    Attributes:
        cap: most bytes one scan reads (file sources).
        own_texts: the session's own texts (self-echo), used up by the rows they match.
        pending: the long line the last scan left part-way (line sources).
        replay_window: earlier user messages that mark a repeated text a replay
            (store sources that replay, e.g. OpenCode).
        busy_timeout_ms: longest wait behind another process's lock (stores).
        max_line: longest line (bytes) that may be a typed turn; a longer one is
            ``line_too_long`` (line sources; see
            :data:`~actors.upstream.scanning.LONG_LINE_MAX_BYTES`).
    """

    cap: int
    own_texts: OwnTexts
    pending: PendingLine | None = None
    replay_window: int = 50
    busy_timeout_ms: int = 1000
    max_line: int = LONG_LINE_MAX_BYTES


def readable(path: str) -> None:
    """Check that ``path`` can be read as a file (one ``stat``; for ``classify``).

    Raises:
        SessionStateError: it cannot (the message says why in a user's terms).
    """
    state = file_state(path)
    if state.kind != "ok":
        why = "not found" if state.reason == "not_found" else state.reason.replace("_", " ")
        raise SessionStateError(f"cannot read {path}: {why}")


SHOWN_IDS = 10
"""Session ids an error message lists at most (the rest are counted)."""


def pick_one(path: str, ids: list[str], what: str) -> str:
    """The message for a missing or unknown ``--session``: the ids the store holds (pure)."""
    if not ids:
        return f"{what}, but {path} holds no sessions"
    shown = ", ".join(ids[:SHOWN_IDS])
    more = f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else ""
    noun = "session" if len(ids) == 1 else "sessions"
    return f"{what}; {path} holds {len(ids)} {noun}: {shown}{more}"


def never_waiting(path: str) -> bool:
    """A source whose transcripts can be adopted at any moment: never waiting (pure)."""
    return False


def could_not_read(exc: BaseException) -> str:
    """The default phrase for a failed read: ``"it could not be read (OSError)"`` (pure)."""
    return f"it could not be read ({type(exc).__name__})"


@dataclass(frozen=True, kw_only=True)
class Reading:
    """How one source's sessions are adopted, scanned, classified and sampled.

    Attributes:
        baseline: ``(path, thread_id or None, from_start, busy_timeout_ms)
            -> Baseline | str | None``: a new link's identity and starting
            marker (its ``refusal`` set when it gets no link); a phrase
            ("cannot read PATH: ...") or ``None`` when the source cannot be
            read now. Blocks on bounded reads; never raises.
        waiting: whether a transcript cannot be decided yet (its header
            line is not complete): adopt it again later. Never raises.
        scan: ``(path, thread_id, marker, hint, context) -> ScanResult``: one
            scan from the marker. Never raises (failures are result kinds).
        classify: ``(path, session or None, cap) -> decisions``: ``ssa
            classify``'s dicts, lazily. Raises ``InvalidArgument`` /
            ``SessionStateError`` in a user's terms.
        project: ``(path, thread_id) -> directory or None``: where the tool
            ran. May raise (the caller logs and shows nothing).
        sample: ``directory -> (path, thread_id)``: write one small sample
            session under ``directory`` (its own new directory) with a typed
            turn (``ssa demo``). Raises ``OSError`` (and the store's errors).
        type_turn: ``(path, thread_id, text)``: append a turn a person typed
            to a sample session, in the tool's shape.
        lines: ``path or None -> line classifier`` for line-based sources
            (``None``: not line based).
        poll: a store's batched change query, ``(path, thread_ids,
            busy_timeout_ms) -> {thread_id: seq}`` (an id missing: that
            session is gone); raises when the store cannot be queried. A
            source with ``poll`` gets this cadence's :class:`StoreHint` in
            each scan. ``None`` for file sources.
        problem: what is wrong with the source given the exception reading
            it raised, a phrase completing "cannot read PATH: ...".
        units_in: the units over an event's source pointer, to read typed
            text back (:data:`~actors.upstream.typedtext.UnitsIn`); ``None``:
            this source cannot read its turns back yet.
    """

    baseline: Callable[[str, str | None, bool, int], Baseline | str | None]
    scan: Callable[[str, str, Marker, StoreHint | None, ScanContext], ScanResult]
    classify: Callable[[str, str | None, int], Iterator[dict[str, Any]]]
    project: Callable[[str, str], str | None]
    sample: Callable[[Path], tuple[str, str]]
    type_turn: Callable[[str, str, str], None]
    waiting: Callable[[str], bool] = never_waiting
    lines: Callable[[str | None], LineClassifier] | None = None
    poll: Callable[[str, list[str], int], dict[str, int]] | None = None
    problem: Callable[[BaseException], str] = could_not_read
    units_in: UnitsIn | None = None
