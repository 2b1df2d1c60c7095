"""Gemini CLI's heavy half: its :class:`~actors.upstream.reading.Reading`, a line-based one
for ``*.jsonl``; the older whole documents (``*.json``) are read by
:mod:`actors.upstream.gemini.docreading`, chosen by the file's suffix.

Loaded on first use by :func:`actors.upstream.gemini.source.reading`. The
rows are decided one line at a time by :func:`actors.upstream.gemini.classify.read_gemini_rows`;
the session's verdict comes from its header line (a sub-agent's file is
refused) and from the project's ``logs.json``: the TUI logs every query it is
given there before it records the turn, program-driven runs (``gemini -p``,
ACP) never do (docs/upstream-gemini.md). So

* a session holding a prompt whose id ``logs.json`` does not hold is adopted
  without a link (``program_driven``), once its file is older than
  :data:`~actors.upstream.evidence.EVIDENCE_GRACE_S` (the agent stream logs
  the query without waiting for the write: before that it is adopted again
  later);
* at every scan a typed row counts only when ``logs.json`` holds the
  session's id; a ``logs.json`` that cannot be parsed (Gemini CLI rewrites it
  whole, not atomically), or that does not hold the id while the file is
  that recent (``logs_pending``), stops the scan before the row, to read it again.

Known limit of the per-line decision: a ``user`` message rewritten under the
same ``id`` in a later line would be decided again (Gemini CLI rewrites
``gemini`` rows, not ``user`` rows; docs/upstream-gemini.md). Building it
reads nothing; its functions run in their callers' threads.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterator
from typing import Any, Literal

import msgspec

from actors.upstream.common import Unit, decode_object
from actors.upstream.evidence import evidence_may_follow
from actors.upstream.files import file_state, read_range
from actors.upstream.gemini.classify import (
    GeminiHeader,
    _header_of,
    gemini_refusal,
    interactive_session_ids,
    is_copy,
    read_gemini_rows,
    row_kind,
)
from actors.upstream.gemini.docreading import (
    baseline_document,
    classify_document,
    document_waiting,
    is_document,
    scan_document,
)
from actors.upstream.gemini.kit import sample, type_turn
from actors.upstream.gemini.paths import logs_file, project_root_of
from actors.upstream.jsonl import HEAD_LIMIT, classify_lines, line_reading
from actors.upstream.reading import Baseline, Reading, ScanContext
from actors.upstream.scanning import LineClassifier, ScanResult, StoreHint

__all__ = ["READING", "classify_gemini_line", "gemini_header", "interactive_classifier"]

LOGS_LIMIT = 16 << 20
"""Most bytes of a ``logs.json`` read (a larger one is treated as unreadable)."""

LogsState = Literal["ok", "missing", "unreadable"]


def classify_gemini_line(line: bytes) -> Unit:
    """Decide one line on its own (a ``user`` row: typed or why not). Pure; never raises."""
    rows = read_gemini_rows(line + b"\n").rows
    return rows[0].unit() if rows else Unit(human=False, reason="blank")


def gemini_header(first: bytes) -> tuple[str | None, str | None]:
    """The header line's verdict: ``(None, refusal)``; the file's name stays the id.

    ``subagent`` for a sub-agent's file, ``not_a_session`` when the first
    line is no header. Pure.
    """
    _, value = decode_object(first)
    if value is None or row_kind(value) != "header":
        return None, "not_a_session"
    return None, "subagent" if value.get("kind") == "subagent" else None


def _header(path: str) -> GeminiHeader | None:
    """The file's header line (first line, at most :data:`HEAD_LIMIT` bytes), or ``None``."""
    head, _ = read_range(path, 0, HEAD_LIMIT, None)
    if not head or b"\n" not in head:
        return None
    _, value = decode_object(head.split(b"\n", 1)[0])
    return _header_of(value) if value is not None and row_kind(value) == "header" else None


def _session_id(path: str) -> str | None:
    """The header's ``sessionId`` (first line, at most :data:`HEAD_LIMIT` bytes)."""
    header = _header(path)
    return header.session_id if header is not None else None


def _logged(path: str, session_id: str | None) -> LogsState | bool:
    """Whether the project's ``logs.json`` holds a query of ``session_id``.

    Returns ``True``/``False``, ``"missing"`` (no ``logs.json``) or
    ``"unreadable"`` (it cannot be read, or is being rewritten and does not
    name the session yet: ask again later). A file of at most
    :data:`LOGS_LIMIT` bytes is parsed (:func:`interactive_session_ids`); a
    larger one (the TUI keeps every query, pastes included, so it only grows),
    or one that does not parse (Gemini CLI rewrites it whole, not atomically),
    is searched for the session's ``"sessionId": "<id>"`` field instead, in
    bounded pieces (:func:`_names_session`). Blocks on reads; never raises.
    """
    logs = logs_file(path)
    state = file_state(logs)
    if state.kind == "missing":
        return "missing"
    if state.kind != "ok" or session_id is None:
        return "unreadable" if state.kind != "ok" else False
    if state.size <= LOGS_LIMIT:
        data, _ = read_range(logs, 0, state.size, None)
        ids = interactive_session_ids(data) if data is not None else None
        if ids is not None:
            return session_id in ids
    found = _names_session(logs, session_id)
    if found is None:
        return "unreadable"
    if found or state.size > LOGS_LIMIT:
        return found
    return "unreadable"  # being rewritten: it may not name the session yet


_PIECE = 4 << 20
"""Bytes read at a time when ``logs.json`` is searched instead of parsed."""


def _names_session(logs: str, session_id: str) -> bool | None:
    """Whether ``logs`` holds ``"sessionId": "<session_id>"`` (any spacing); ``None`` when
    it cannot be read. Reads it in :data:`_PIECE`-byte pieces; never raises."""
    pattern = re.compile(rb'"sessionId"\s*:\s*"' + re.escape(session_id.encode()) + rb'"')
    overlap = 64 + len(session_id)
    offset, tail = 0, b""
    while True:
        data, _ = read_range(logs, offset, _PIECE, None)
        if data is None:
            return None
        if pattern.search(tail + data):
            return True
        if len(data) < _PIECE:
            return False
        tail = data[-overlap:]
        offset += len(data)


def logs_pending(path: str) -> bool:
    """Whether the session at ``path`` cannot be decided yet (adopt it again later):
    its project's ``logs.json`` is being rewritten, or ``logs.json`` does not name
    it while its file changed within the grace
    (:func:`~actors.upstream.evidence.evidence_may_follow`): a prompted session's
    query may still be logged, and a session with no prompt yet (``gemini -p``
    writes its header before its prompt) cannot be told from one the TUI runs.
    Never raises."""
    if is_document(path):
        return document_waiting(path)
    if _LINES.waiting(path):
        return True
    logged = _logged(path, _session_id(path))
    return logged == "unreadable" or (logged is not True and evidence_may_follow(path))


class _Evidence:
    """One scan's view of a session's ``logs.json`` evidence, each part read at its first use.

    Attributes:
        logged: :func:`_logged` for the session's id.
        may_follow: with ``grace``, whether an entry may still be written
            (:func:`~actors.upstream.evidence.evidence_may_follow`).
    """

    def __init__(self, path: str, grace: bool) -> None:
        self._path = path
        self._grace = grace

    @functools.cached_property
    def header(self) -> GeminiHeader | None:
        return _header(self._path)

    @functools.cached_property
    def logged(self) -> LogsState | bool:
        header = self.header
        return _logged(self._path, header.session_id if header is not None else None)

    @functools.cached_property
    def may_follow(self) -> bool:
        return self._grace and evidence_may_follow(self._path)


def interactive_classifier(path: str, *, grace: bool = True) -> LineClassifier:
    """The line classifier for one session file, given its ``logs.json`` as it is now.

    ``grace=False`` (``ssa classify``) decides on what is on disk now, without
    waiting for a query that may still be logged.

    A typed row counts only when ``logs.json`` holds the session's id
    (``program_driven`` otherwise); while ``logs.json`` cannot be read a typed
    row stops the scan (``logs_unreadable``). ``logs.json`` is read at the
    first typed row only (an idle scan reads none of it). The classifier runs
    on the scanning thread and blocks on those bounded reads; it never raises.
    """
    evidence = _Evidence(path, grace)

    def classify(line: bytes) -> Unit:
        unit = classify_gemini_line(line)
        if not unit.human:
            return unit
        if is_copy(evidence.header, unit.occurred_at):  # an older document's converted history
            return Unit(human=False, reason="copied_history")
        if evidence.logged == "unreadable":
            return Unit(human=False, reason="logs_unreadable", stop=True)
        if evidence.logged is not True:
            if evidence.may_follow:  # the query may not be logged yet: read the row again
                return Unit(human=False, reason="logs_pending", stop=True)
            return Unit(human=False, reason="program_driven")
        return unit

    return classify


_LINES = line_reading(classify_gemini_line, header=gemini_header,
                      classify_at=interactive_classifier, project=lambda lines: None,
                      sample=sample, type_turn=type_turn)


def _has_prompt(path: str) -> bool:
    """Whether the file's first :data:`HEAD_LIMIT` bytes hold a ``user`` row decided typed."""
    data, _ = read_range(path, 0, HEAD_LIMIT, None)
    return data is not None and any(r.typed for r in read_gemini_rows(data).rows)


def baseline(path: str, thread_id: str | None, from_start: bool,
             busy_timeout_ms: int, *, grace: bool = True) -> Baseline | str | None:
    """The line baseline, refused ``program_driven`` when the session holds a prompt that
    ``logs.json`` never logged; ``None`` while that query may still be logged
    (unless ``grace=False``).
    Caller's thread; blocks on bounded reads; never raises."""
    if is_document(path):
        return baseline_document(path, thread_id, from_start, grace=grace)
    found = _LINES.baseline(path, thread_id, from_start, busy_timeout_ms)
    if not isinstance(found, Baseline) or found.refusal is not None:
        return found
    session_id = _session_id(path)
    logged = _logged(path, session_id)
    if logged == "unreadable":
        return None  # being rewritten: decided when adopted again (waiting says so)
    header = (None if session_id is None
              else GeminiHeader(session_id=session_id, project_hash="", kind="main"))
    ids = (frozenset({session_id}) if logged is True and session_id is not None
           else frozenset())
    has_prompt = _has_prompt(path)
    refusal = gemini_refusal(header, ids if logged != "missing" else None,
                             has_prompt=has_prompt)
    undecided = refusal == "program_driven" or (refusal is None and not has_prompt
                                                and logged is not True)
    if undecided and grace and evidence_may_follow(path):
        # Its query may not be logged yet, or (no prompt yet) nothing tells a gemini -p
        # run from a TUI session yet: decided when adopted again.
        return None
    return msgspec.structs.replace(found, refusal=refusal) if refusal else found


def classify(path: str, session: str | None, cap: int) -> Iterator[dict[str, Any]]:
    """``ssa classify``: every line's (a document's: message's) decision,
    ``not_monitored: <why>`` for a refused session."""
    if is_document(path):
        return classify_document(path)
    found = baseline(path, None, True, 0, grace=False)  # what is on disk now decides
    refusal = found.refusal if isinstance(found, Baseline) else None
    return classify_lines(path, interactive_classifier(path, grace=False), refusal=refusal,
                          cap=cap)


def project(path: str, thread_id: str) -> str | None:
    """The project root named by the temp dir's ``.project_root`` (or ``None``)."""
    return project_root_of(path)


def scan(path: str, thread_id: str, marker: dict[str, Any], hint: StoreHint | None,
         context: ScanContext) -> ScanResult:
    """One scan: a session document's (``*.json``) by message, a JSONL file's by line."""
    if is_document(path):
        return scan_document(path, marker, own_texts=context.own_texts)
    return _LINES.scan(path, thread_id, marker, hint, context)


READING: Reading = dataclasses.replace(_LINES, baseline=baseline, classify=classify,
                                       project=project, waiting=logs_pending, scan=scan)
"""Gemini CLI's reading: interactive main sessions are linked; sub-agents' and
program-driven sessions are not."""
