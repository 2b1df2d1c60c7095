"""Adopting, scanning and classifying Gemini CLI's older session documents (``*.json``).

The decisions are :mod:`actors.upstream.gemini.document`'s; this module adds
the reads (the document, bounded by
:data:`~actors.upstream.gemini.document.DOC_LIMIT`; the project's
``logs.json``) and the marker. A document is rewritten whole on every change,
so the marker cannot be a byte offset::

    {"format": "json", "count": n, "last": id of message n-1 or None,
     "until": newest decided time (epoch ms) or None,
     "offset": file size, "inode": ino, "epoch": 0}

(``offset``/``inode`` only let ``ssa hook`` tell an unchanged file by one
``stat``; the scan reads the whole document). See
:func:`~actors.upstream.gemini.document.new_messages` for how a rewrite of
earlier messages is met without counting a turn twice or losing one.

A typed message counts only when the project's ``logs.json`` holds this
session's query with the same text (``program_driven`` when it holds none of
the session's, ``not_logged`` when it holds others); within
:data:`~actors.upstream.evidence.EVIDENCE_GRACE_S` of the document's last
change the scan stops before it instead (``logs_pending``) and reads it again.
Every function runs in its caller's thread, blocks on bounded reads and never
raises (``classify_document`` raises ``SessionStateError`` as ``ssa classify`` wants).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Literal

from actors.errors import SessionStateError
from actors.upstream.common import OwnTexts, Unit
from actors.upstream.evidence import evidence_may_follow
from actors.upstream.files import FileState, file_state, read_range
from actors.upstream.gemini.classify import gemini_refusal
from actors.upstream.gemini.document import (
    DOC_LIMIT,
    DocMessage,
    SessionDocument,
    decode_document,
    is_new,
    logged_queries,
    new_messages,
)
from actors.upstream.gemini.paths import logs_file
from actors.upstream.reading import Baseline, readable
from actors.upstream.scanning import ScanResult, count_turns

__all__ = ["LOGS_LIMIT", "baseline_document", "classify_document", "document_waiting",
           "is_document", "scan_document"]

LOGS_LIMIT = 16 << 20
"""Most bytes of a ``logs.json`` read to match queries (a larger one matches none)."""

Queries = frozenset[str] | Literal["missing", "unreadable", "too_large"]


def is_document(path: str) -> bool:
    """Whether ``path`` is a session document (``*.json``) rather than JSONL (pure)."""
    return path.endswith(".json")


def _read(path: str) -> tuple[SessionDocument | str, FileState]:
    """The decoded document, or why not: ``missing``, ``transient``,
    ``document_too_large``, ``incomplete``, ``not_a_session``."""
    state = file_state(path)
    if state.kind != "ok":
        return state.kind, state
    if state.size > DOC_LIMIT:
        return "document_too_large", state
    data, why = read_range(path, 0, state.size, state.inode)
    if data is None:
        return ("missing" if why == "missing" else "transient"), state
    return decode_document(data), state


def _queries(path: str, session_id: str) -> Queries:
    """This session's normalized queries in the project's ``logs.json``, or why not."""
    logs = logs_file(path)
    state = file_state(logs)
    if state.kind == "missing":
        return "missing"
    if state.kind != "ok":
        return "unreadable"
    if state.size > LOGS_LIMIT:
        return "too_large"
    data, _ = read_range(logs, 0, state.size, None)
    found = logged_queries(data, session_id) if data is not None else None
    return "unreadable" if found is None else found


class _Evidence:
    """One scan's ``logs.json`` evidence for a document, read at its first use."""

    def __init__(self, path: str, session_id: str, grace: bool) -> None:
        self._path, self._session, self._grace = path, session_id, grace
        self._queries: Queries | None = None
        self._may_follow: bool | None = None

    def queries(self) -> Queries:
        if self._queries is None:
            self._queries = _queries(self._path, self._session)
        return self._queries

    def may_follow(self) -> bool:
        if self._may_follow is None:
            self._may_follow = self._grace and evidence_may_follow(self._path)
        return self._may_follow

    def decide(self, message: DocMessage) -> Unit:
        """The message's :class:`Unit` given the evidence (``stop`` while it may still come)."""
        if not message.typed:
            return Unit(human=False, reason=message.reason)
        queries = self.queries()
        if queries == "unreadable":
            return Unit(human=False, reason="logs_unreadable", stop=True)
        if queries == "too_large":
            return Unit(human=False, reason="logs_too_large")
        matched = not isinstance(queries, str) and any(k in queries for k in message.keys)
        if matched:
            return Unit(human=True, reason="typed", text=message.text,
                        occurred_at=message.occurred_at)
        if self.may_follow():
            return Unit(human=False, reason="logs_pending", stop=True)
        logged = not isinstance(queries, str) and bool(queries)
        return Unit(human=False, reason="not_logged" if logged else "program_driven")


def _refusal(doc: SessionDocument, path: str, grace: bool) -> str | Literal[False] | None:
    """The session's refusal (``None``: monitorable; ``False``: not decidable yet)."""
    has_prompt = any(m.typed for m in doc.messages)
    queries = _queries(path, doc.header.session_id)
    if queries == "unreadable":
        return False
    ids = (frozenset({doc.header.session_id}) if not isinstance(queries, str) and queries
           else frozenset())
    refusal = gemini_refusal(doc.header, ids if queries != "missing" else None,
                             has_prompt=has_prompt)
    if refusal == "program_driven" and grace and evidence_may_follow(path):
        return False
    return refusal


def _marker(state: FileState, count: int, last: str | None, until: int | None
            ) -> dict[str, Any]:
    return {"format": "json", "count": count, "last": last, "until": until,
            "offset": state.size, "inode": state.inode, "epoch": 0}


def baseline_document(path: str, thread_id: str | None, from_start: bool, *,
                      grace: bool = True) -> Baseline | None:
    """A document's baseline: every message it holds now is behind the marker (all
    ahead of it with ``from_start``).

    ``None`` while it cannot be decided yet: missing, being rewritten
    (``incomplete`` and changed within the grace), or ``logs.json`` unreadable
    or not yet naming a prompted session. Refusals: ``document_too_large``,
    ``not_a_session`` (an ``incomplete`` one older than the grace too),
    ``subagent``, ``program_driven``.
    """
    doc, state = _read(path)
    if state.kind != "ok":
        return None
    thread = thread_id or os.path.splitext(os.path.basename(path))[0]
    ref = {"path": os.path.realpath(path)}
    if isinstance(doc, str):
        if doc == "incomplete" and grace and evidence_may_follow(path):
            return None
        if doc in ("missing", "transient"):
            return None
        return Baseline(host_id="gateway:local", thread_id=thread, upstream_ref=ref,
                        marker=_marker(state, 0, None, None),
                        refusal=doc if doc != "incomplete" else "not_a_session")
    refusal = _refusal(doc, path, grace)
    if refusal is False:
        return None
    messages = doc.messages
    if from_start or not messages:
        marker = _marker(state, 0, None, None)
    else:
        marker = _marker(state, len(messages), messages[-1].message_id, doc.newest)
    return Baseline(host_id="gateway:local", thread_id=thread, upstream_ref=ref,
                    marker=marker, refusal=refusal)


def document_waiting(path: str) -> bool:
    """Whether the document cannot be adopted yet (see :func:`baseline_document`)."""
    state = file_state(path)
    return state.kind == "ok" and baseline_document(path, None, False) is None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def scan_document(path: str, marker: dict[str, Any], *, own_texts: OwnTexts,
                  grace: bool = True) -> ScanResult:
    """Decide the messages added since ``marker`` (see the module docstring).

    Returns ``activity`` (the marker moves; ``human_turns`` counted, reason
    ``scanned``, or ``document_rewritten`` when earlier messages changed: not the
    generic "rewritten" re-baseline, turns after it do count), ``no_news``
    (nothing new; ``stopped:<why>`` with ``recheck`` while a document is
    being rewritten or a query may still be logged; ``stopped:document_too_large`` past
    :data:`~actors.upstream.gemini.document.DOC_LIMIT`), ``missing`` or
    ``transient``.
    """
    count = _int(marker.get("count"))
    if count is None or count < 0:
        return ScanResult(kind="no_news", reason="invalid_marker")
    last = marker.get("last") if isinstance(marker.get("last"), str) else None
    until = _int(marker.get("until"))
    doc, state = _read(path)
    if state.kind != "ok":
        return ScanResult(kind=state.kind, reason=state.reason)
    if isinstance(doc, str):
        if doc == "missing":
            return ScanResult(kind="missing", reason="unreadable")
        if doc == "transient":
            return ScanResult(kind="transient", reason="unreadable")
        return ScanResult(kind="no_news", reason=f"stopped:{doc}", recheck=doc == "incomplete")
    start, rewritten = new_messages(doc, count, last, until)
    evidence = _Evidence(path, doc.header.session_id, grace)
    units: list[Unit] = []
    decided = start
    stopped: str | None = None
    newest = until
    for message in doc.messages[start:]:
        fresh = is_new(message, until, rewritten)
        unit = evidence.decide(message) if fresh else Unit(human=False, reason="copied_history")
        if unit.stop:
            stopped = unit.reason
            break
        units.append(unit)
        decided = message.index + 1
        if fresh and message.occurred_at is not None:
            newest = message.occurred_at if newest is None else max(newest, message.occurred_at)
    anchor = doc.messages[decided - 1].message_id if decided else None
    next_marker = _marker(state, decided, anchor, newest)
    if stopped is not None:  # ``ssa hook``'s one-stat check must still see news here
        next_marker["offset"] = _int(marker.get("offset")) or 0
    keys = ("count", "last", "until", "offset", "inode")
    if all(next_marker[k] == marker.get(k) for k in keys):
        return ScanResult(kind="no_news", reason=f"stopped:{stopped}" if stopped else "no_news",
                          recheck=stopped is not None)
    turns, when = count_turns(units, own_texts)
    counted = [m for m, u in zip(doc.messages[start:decided], units, strict=True) if u.human]
    return ScanResult(
        kind="activity", reason="document_rewritten" if rewritten else "scanned",
        human_turns=turns, next_marker=next_marker,
        occurred_at=(when if when is not None else state.mtime_ms) if turns else None,
        dedupe_id=next((m.message_id for m in reversed(counted)), None) if turns else None,
        recheck=stopped is not None)


def classify_document(path: str) -> Iterator[dict[str, Any]]:
    """``ssa classify`` for a document: ``{"line": message index, "human", "reason"}`` per
    message, decided on what is on disk now (no grace).

    Raises:
        SessionStateError: it cannot be read, is too large, or is no session document.
    """
    readable(path)
    doc, _ = _read(path)
    if isinstance(doc, str):
        raise SessionStateError(f"cannot read {path}: {doc.replace('_', ' ')}")
    refusal = _refusal(doc, path, grace=False)
    evidence = _Evidence(path, doc.header.session_id, grace=False)
    blocked: str | None = None
    for message in doc.messages:
        entry: dict[str, Any] = {"line": message.index, "human": False}
        if blocked is not None:
            entry["reason"] = "not_reached"
            yield entry
            continue
        unit = evidence.decide(message)
        if refusal:
            entry["reason"] = f"not_monitored: {refusal} ({unit.reason})"
        else:
            entry["human"] = unit.human
            entry["reason"] = unit.reason
        if unit.stop:
            entry["stop"] = True
            blocked = unit.reason
        yield entry
