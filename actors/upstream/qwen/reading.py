"""Qwen Code's heavy half: its :class:`~actors.upstream.reading.Reading`, a line-based one.

Loaded on first use by :func:`actors.upstream.qwen.source.reading`. The
records are decided one line at a time by :func:`actors.upstream.qwen.classify.read_qwen_rows`;
the session's verdict (:func:`~actors.upstream.qwen.classify.qwen_refusal`) comes
from its first records (a sub-agent's, a channel's or a daemon's session) and
from the ``<session id>.runtime.json`` sidecar, which only the interactive UI
writes (docs/upstream-qwen.md). So

* a session holding a prompt without a sidecar naming it is adopted without a
  link (``program_driven``) once its file is older than
  :data:`~actors.upstream.evidence.EVIDENCE_GRACE_S` (before that the sidecar
  may still be written: it is adopted again later), as is one whose records
  say a channel or daemon drives it (``source:<type>``) or a sub-agent's
  (``subagent``);
* at every scan a typed record counts only while the sidecar names the
  session and its first records refuse nothing; one without the sidecar in a
  file that recent stops the scan before it (``sidecar_pending``), to read it
  again;
* a record kind 0.24.4 does not write (``unknown_kind``) is logged once per
  process under ``actors.upstream.qwen.classify`` (its name only, never a record's text).

Building it reads nothing; its functions run in their callers' threads.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterator
from typing import Any

import msgspec

from actors.upstream.common import Unit
from actors.upstream.evidence import evidence_may_follow
from actors.upstream.files import file_state, read_range
from actors.upstream.jsonl import HEAD_LIMIT, PROJECT_HEAD_BYTES, classify_lines, line_reading
from actors.upstream.kindlog import log_unknown_kind
from actors.upstream.qwen.classify import (
    QwenSession,
    qwen_refusal,
    read_qwen_rows,
    runtime_status_path,
    runtime_status_session,
)
from actors.upstream.qwen.kit import sample, type_turn
from actors.upstream.reading import Baseline, Reading
from actors.upstream.scanning import LineClassifier

__all__ = ["READING", "classify_qwen_line", "session_classifier"]

RUNTIME_LIMIT = 1 << 16
"""Most bytes of a ``runtime.json`` sidecar read."""

logger = logging.getLogger("actors.upstream.qwen.classify")  # the classifier's own logger


def classify_qwen_line(line: bytes) -> Unit:
    """Decide one record on its own; a sub-agent's record is never typed.

    Args:
        line: one line of a session file, without its newline.

    Returns:
        The record's decision (``blank`` for an empty line). An ``unknown_kind``
        is logged once per process and kind, its name only
        (:func:`~actors.upstream.kindlog.log_unknown_kind`); nothing else is.
        Any thread; never raises.
    """
    scan = read_qwen_rows(line + b"\n")
    if not scan.rows:
        return Unit(human=False, reason="blank")
    if scan.unknown_kinds:
        log_unknown_kind(logger, "Qwen Code", scan.unknown_kinds[0])
    unit = scan.rows[0].unit()
    if unit.human and scan.cursor.session.subagent:
        return Unit(human=False, reason="subagent")
    return unit


def _interactive(path: str, session_id: str | None) -> bool:
    """Whether the session's ``runtime.json`` sidecar names it (one small read)."""
    sidecar = str(runtime_status_path(path))
    state = file_state(sidecar)
    if state.kind != "ok":
        return False
    data, _ = read_range(sidecar, 0, min(state.size, RUNTIME_LIMIT), None)
    named = runtime_status_session(data) if data is not None else None
    return named is not None and named in {session_id, _stem(path)}


def _stem(path: str) -> str:
    return os.path.basename(path).removesuffix(".jsonl")


def _read_head(path: str, limit: int) -> tuple[QwenSession, bool]:
    """What the first ``limit`` bytes' records say of the session, and whether one is typed."""
    data, _ = read_range(path, 0, limit, None)
    if not data:
        return QwenSession(), False
    scan = read_qwen_rows(data)
    return scan.cursor.session, any(r.typed for r in scan.rows)


def session_classifier(path: str, *, grace: bool = True) -> LineClassifier:
    """The record classifier for one session file, given its sidecar and first records now.

    ``grace=False`` (``ssa classify``) decides on what is on disk now, without
    waiting for a sidecar that may still be written.

    A typed record counts only when :func:`~actors.upstream.qwen.classify.qwen_refusal`
    refuses nothing for a prompted session; otherwise its reason is the
    refusal. Blocks on two bounded reads.
    """
    session, _ = _read_head(path, PROJECT_HEAD_BYTES)
    refusal = qwen_refusal(session, _interactive(path, session.session_id), has_prompt=True)
    if refusal == "program_driven" and grace and evidence_may_follow(path):
        refusal = "sidecar_pending"  # the UI may not have written it yet

    def classify(line: bytes) -> Unit:
        unit = classify_qwen_line(line)
        if not unit.human or refusal is None:
            return unit
        return Unit(human=False, reason=refusal, stop=refusal == "sidecar_pending")

    return classify


def _project(lines: list[bytes]) -> str | None:
    return read_qwen_rows(b"".join(line + b"\n" for line in lines)).cursor.session.cwd


_LINES = line_reading(classify_qwen_line, classify_at=session_classifier, project=_project,
                      sample=sample, type_turn=type_turn)


def baseline(path: str, thread_id: str | None, from_start: bool,
             busy_timeout_ms: int, *, grace: bool = True) -> Baseline | str | None:
    """The line baseline, with :func:`~actors.upstream.qwen.classify.qwen_refusal`'s verdict on the
    first :data:`~actors.upstream.jsonl.HEAD_LIMIT` bytes; ``None`` while a missing
    sidecar may still be written (unless ``grace=False``).
    Caller's thread; blocks on bounded reads; never raises."""
    found = _LINES.baseline(path, thread_id, from_start, busy_timeout_ms)
    if not isinstance(found, Baseline):
        return found
    refusal, undecided = _refusal(path)
    if undecided and grace and evidence_may_follow(path):
        return None  # the sidecar may still be written: decided when adopted again
    return msgspec.structs.replace(found, refusal=refusal) if refusal else found


def _refusal(path: str) -> tuple[str | None, bool]:
    """:func:`~actors.upstream.qwen.classify.qwen_refusal` on the first
    :data:`~actors.upstream.jsonl.HEAD_LIMIT` bytes and the sidecar as they are now, and
    whether that is undecided while the sidecar may still be written: refused
    ``program_driven``, or no prompt yet and no sidecar naming it (``qwen -p`` writes
    its first records before its prompt: nothing tells it from a UI session yet)."""
    session, has_prompt = _read_head(path, HEAD_LIMIT)
    interactive = _interactive(path, session.session_id)
    refusal = qwen_refusal(session, interactive, has_prompt=has_prompt)
    return refusal, (refusal == "program_driven"
                     or (refusal is None and not has_prompt and not interactive))


def sidecar_pending(path: str) -> bool:
    """Whether the session at ``path`` cannot be decided yet (adopt it again later):
    its first line is not complete, or, while the sidecar may still be written, it
    was prompted without a sidecar naming it or holds no prompt and no sidecar yet.
    Never raises."""
    return _LINES.waiting(path) or (evidence_may_follow(path) and _refusal(path)[1])


def classify(path: str, session: str | None, cap: int) -> Iterator[dict[str, Any]]:
    """``ssa classify``: every record's decision, ``not_monitored: <why>`` for a refused session."""
    found = baseline(path, None, True, 0, grace=False)  # what is on disk now decides
    refusal = found.refusal if isinstance(found, Baseline) else None
    return classify_lines(path, session_classifier(path, grace=False), refusal=refusal,
                          cap=cap)


READING: Reading = dataclasses.replace(_LINES, baseline=baseline, classify=classify,
                                       waiting=sidecar_pending)
"""Qwen Code's reading: sessions the interactive UI ran are linked; program-driven,
channel-driven and sub-agent sessions are not."""
