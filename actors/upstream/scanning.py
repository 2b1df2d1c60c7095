"""The mechanics of scans: results, line-based JSONL scans, turn counting (anchor §3.17).

No source is named here; :mod:`actors.upstream.scan` adds the registry's
per-source line classifiers.

These functions run in an upstream monitor actor's thread and block only on
bounded reads; they never raise (every failure becomes a result kind).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal, NamedTuple

import msgspec

from actors.upstream.common import OwnTexts, Unit, text_hash
from actors.upstream.files import (
    CHECK_BYTES,
    Chunk,
    Newline,
    check_of,
    end_of_complete_lines,
    file_state,
    find_newline,
    read_lines,
    read_range,
)
from actors.upstream.longline import LineReducer
from actors.upstream.longline_reduced import reduced_unit

__all__ = [
    "LONG_LINE_MAX_BYTES",
    "PASS_SCAN_BYTES",
    "Counted",
    "LineClassifier",
    "PendingLine",
    "ScanResult",
    "StoreHint",
    "classify_long_line",
    "count_turns",
    "count_typed",
    "scan_jsonl",
]

logger = logging.getLogger(__name__)

LONG_LINE_MAX_BYTES = 64 << 20
"""A line longer than this (bytes, its newline not counted) is never a person's typed turn.

Nobody types or pastes 64 MiB into a prompt, and no tool could send it: the
largest typed rows are prompts with pasted images (base64), and the models'
APIs refuse requests over about 32 MB, so the bound keeps twice that as a
margin. Such a line is a tool's output or a generated blob. Once a scan
knows a line is longer (a plain byte search found no newline in its first
``LONG_LINE_MAX_BYTES + 1`` bytes) it is decided not typed (reason
``line_too_long``) without being parsed or reduced, and only its end is
searched for (:func:`~actors.upstream.files.find_newline`), so even a
short-lived ``ssa hook`` passes it within its budget. Lines up to this
length are reduced and classified (:mod:`actors.upstream.longline`).
``GatewayConfig.long_line_max_bytes`` sets it for a gateway.
"""
PASS_SCAN_BYTES = 256 << 20
"""Most bytes one scan searches for the end of a line longer than :data:`LONG_LINE_MAX_BYTES`
(a byte search: a fraction of a second from the page cache)."""

LineClassifier = Callable[[bytes], Unit]
ScanKind = Literal["activity", "missing", "no_news", "transient"]


@dataclass(eq=False)
class PendingLine:
    """A line longer than the scan cap, part-way through its reduction.

    Its upstream monitor holds it in memory between scans (never stored):
    the marker stays at the line's start until the line is classified, so a
    restart, a lease moving to another process or a rewrite simply reads the
    line again from its start.

    Attributes:
        reducer: the line's :class:`LineReducer`, fed up to ``resume_at``;
            ``None`` once the line is known to be longer than the bound
            (:data:`LONG_LINE_MAX_BYTES`): it is decided ``line_too_long``
            and only its end is searched for.
        start: the line's offset (== the marker offset while pending).
        inode: the file's inode when the line was started.
        epoch: the marker's epoch when the line was started.
        check: :func:`check_of` the last bytes fed (where the next read resumes).
        stopped: the decision, once the line is classified and it stops the
            scan (a Pi line that is not a JSON object); later scans stop at it
            without reading it again.
        passed: bytes from ``start`` known to hold no newline (``reducer`` ``None``).
    """

    reducer: LineReducer | None
    start: int
    inode: int
    epoch: int
    check: str
    stopped: Unit | None = None
    passed: int = 0

    @property
    def resume_at(self) -> int:
        """The offset of the first byte not fed (or searched) yet."""
        return self.start + (self.reducer.fed if self.reducer is not None else self.passed)


class ScanResult(msgspec.Struct, frozen=True, kw_only=True):
    """What one scan of one link found.

    Attributes:
        kind: ``"activity"`` (the marker moves; maybe with human turns),
            ``"missing"`` (the scan proved the source is gone), ``"no_news"``,
            ``"transient"`` (an error that proves nothing).
        reason: a short code for logs.
        human_turns: turns a person typed that are not the gateway's own.
        next_marker: the marker to store (``"activity"`` only).
        occurred_at: the newest counted turn's time, epoch ms.
        dedupe_id: identifies this batch of turns within the source (the new
            byte offset, or the newest counted message id).
        pending: a line longer than the scan cap, part-way read, for the
            next scan (JSONL sources; held in memory, never stored).
        more: the scan stopped at the byte cap with bytes left to read (a
            backlog of lines, or the rest of a long line): scan again soon.
        invalid_lines: complete lines this scan decided were not JSON objects
            (not typed turns; read past, and logged by the monitor).
        recheck: a decision waits on time, not on a change (a write that may
            still be in flight): the monitor scans again soon even when the
            source does not change again.
        typed: the plain :func:`~actors.upstream.common.text_hash` of each counted
            turn, in order (the event's source pointer keys them before storing;
            never stored or logged as they are).
        span: ``(from, to)``, the byte range of the transcript this scan decided
            (line sources; ``from`` is where the first counted line starts), or
            ``None`` (stores: their turns are found by session and digest).
    """

    kind: ScanKind
    reason: str
    human_turns: int = 0
    next_marker: dict[str, Any] | None = None
    occurred_at: int | None = None
    dedupe_id: str | None = None
    pending: PendingLine | None = None
    more: bool = False
    invalid_lines: int = 0
    recheck: bool = False
    typed: tuple[str, ...] = ()
    span: tuple[int, int] | None = None
    typed_ids: tuple[str, ...] = ()
    """The store's message id of each counted turn (store sources; in ``typed``'s order)."""


class Counted(NamedTuple):
    """What :func:`count_typed` found: the counted turns, the newest one's time, their digests."""

    turns: int
    newest: int | None
    digests: tuple[str, ...]


def count_typed(units: Iterable[Unit], own_texts: OwnTexts) -> Counted:
    """Like :func:`count_turns`, and also the plain text digest of each counted unit.

    A digest is :func:`~actors.upstream.common.text_hash` of the whole typed
    text (``echo_hash`` for a shortened long line); the caller keys it before
    it is stored (:mod:`actors.upstream.typedtext`). Pure apart from using up
    ``own_texts``; caller's thread.
    """
    digests: list[str] = []
    newest: int | None = None
    for unit in units:
        if not unit.human:
            continue
        digest = unit.echo_hash or text_hash(unit.text)
        if own_texts.claim(digest, unit.occurred_at):
            continue
        digests.append(digest)
        if unit.occurred_at is not None:
            newest = unit.occurred_at if newest is None else max(newest, unit.occurred_at)
    return Counted(len(digests), newest, tuple(digests))


def count_turns(units: Iterable[Unit], own_texts: OwnTexts) -> tuple[int, int | None]:
    """Count human units whose text is not one of the gateway's own (self-echo).

    Each human unit asks ``own_texts`` in order; a matching own text is used
    up by the unit (:class:`~actors.upstream.common.OwnTexts`).

    Returns:
        ``(turns, newest occurred_at among them or None)``.
    """
    counted = count_typed(units, own_texts)
    return counted.turns, counted.newest


def classify_long_line(classify: LineClassifier, reducer: LineReducer) -> Unit:
    """Finish ``reducer`` and classify the reduced line with the source's classifier.

    Caller's thread; pure apart from finishing the reducer; never raises.
    """
    reduced = reducer.finish()
    return reduced_unit(_safe_classify(classify, reduced.line), reduced)


def scan_jsonl(
    path: str, marker: dict[str, Any], *, classify: LineClassifier, cap: int,
    own_texts: OwnTexts, pending: PendingLine | None = None,
    max_line: int = LONG_LINE_MAX_BYTES, pass_bytes: int = PASS_SCAN_BYTES,
) -> ScanResult:
    """Scan an append-only JSONL transcript forward from its byte marker.

    Only complete lines are classified and the marker moves only over
    classified bytes; blank lines are consumed; a unit with ``stop`` halts the
    scan before it (it is never skipped). A line longer than ``cap`` is
    reduced a ``cap``-sized piece per scan (:class:`PendingLine`, result
    reason ``long_line`` while bytes of it wait to be read,
    ``long_line_waiting`` while its writer has not finished it) and
    classified once its newline is read. A line longer than ``max_line``
    is never reduced: once a plain byte search finds no newline in its first
    ``max_line + 1`` bytes it is decided not typed (reason ``line_too_long``),
    and scans search on for its end, up to ``pass_bytes`` each (result
    reason ``line_too_long`` until the marker moves past it). A file that shrank below the
    marker, changed inode, or no longer holds the bytes it held just before
    the marker (rewritten in place) is re-baselined at the end of its last
    complete line without counting, and the marker's ``epoch`` moves on, so
    turns after a re-baseline never share a dedupe id with earlier ones. A
    file that shrank may be mid-rewrite, so the scan after it re-baselines
    once more ("settling"): old turns written back are never counted again.
    A rewrite slower than that is caught by content: a marker keeps a digest
    of the whole line before its offset (``last``), a shrink keeps the old
    offset and that digest (``was``), and once the file holds that same line
    right before that offset again, the marker moves there without counting
    (``rewritten_restored``): the old turns came back. (Rows carry their own
    ids and times, so a new row is not the old one.)

    Args:
        path: the transcript.
        marker: ``{"offset": int, "inode": int, "epoch": int, "check": str}``
            (``check`` digests the bytes before the offset; see ``check_of``).
        classify: the source's line classifier.
        cap: most bytes read in this scan.
        own_texts: the session's own texts (self-echo), used up by the rows they match.
        pending: the long line the previous scan left part-way (ignored
            unless it starts at this marker, in the same inode and epoch).
        max_line: longest line (bytes, without its newline) that may be a
            typed turn (see :data:`LONG_LINE_MAX_BYTES`); at least ``cap``
            in effect.
        pass_bytes: most bytes searched in this scan for the end of a line
            longer than ``max_line``.

    Returns:
        A :class:`ScanResult`; its ``pending`` is the long line to hand to
        the next scan. Runs in the caller's thread; blocks on at most ``cap``
        bytes of reads plus a stat, and, on meeting a line longer than
        ``cap``, a byte search of at most ``max_line + pass_bytes`` more;
        never raises.
    """
    offset = marker.get("offset")
    inode = marker.get("inode")
    epoch = marker.get("epoch", 0)
    if not isinstance(offset, int) or offset < 0 or not isinstance(epoch, int):
        return ScanResult(kind="no_news", reason="invalid_marker")
    check = marker.get("check")
    if marker.get("settling"):
        # The last scan met a file cut short (truncated, or mid-rewrite). Whatever
        # was written since may be the old content coming back: re-baseline once
        # more without counting, so old turns are never counted twice.
        state = file_state(path)
        if state.kind != "ok":
            return ScanResult(kind=state.kind, reason=state.reason)
        settled = end_of_complete_lines(path, state.size)
        if settled is None:
            return ScanResult(kind="transient", reason="unreadable_after_rewrite")
        return ScanResult(kind="activity", reason="rewritten_settled", next_marker=_with_was({
            "offset": settled[0], "inode": state.inode, "epoch": epoch + 1,
            "check": check_of(settled[1])}, marker.get("was")))
    restored = _restored(path, marker)
    if restored is not None:
        return restored
    if pending is not None and ((pending.start, pending.inode, pending.epoch) != (
            offset, inode, epoch) or not _marker_holds(path, offset, check, pending.inode)):
        pending = None  # read the line again from the marker, which sees any rewrite
    if pending is not None and pending.stopped is not None:
        return ScanResult(kind="no_news", reason=f"stopped:{pending.stopped.reason}",
                          pending=pending)
    if pending is not None and pending.reducer is None:
        return _pass_long_line(path, pending, marker, stop=pending.resume_at + pass_bytes)
    if pending is not None:
        chunk = read_lines(path, pending.resume_at, cap=cap, inode=pending.inode,
                           check=pending.check)
        if chunk.kind in ("missing", "transient"):
            return ScanResult(kind=chunk.kind, reason=chunk.reason, pending=pending)
        if chunk.kind != "rewritten":
            return _resume_long_line(chunk, pending, marker, classify=classify,
                                     own_texts=own_texts, max_line=max(max_line, cap))
        pending = None  # changed under the line: read it again from the marker
    chunk = read_lines(path, offset, cap=cap, inode=inode if isinstance(inode, int) else None,
                       check=check if isinstance(check, str) else None)
    if chunk.kind == "rewritten":
        rebase = end_of_complete_lines(path, chunk.state.size)
        if rebase is None:
            return ScanResult(kind="transient", reason="unreadable_after_rewrite")
        next_marker: dict[str, Any] = {
            "offset": rebase[0], "inode": chunk.state.inode, "epoch": epoch + 1,
            "check": check_of(rebase[1])}
        if chunk.reason == "shrunk":
            next_marker["settling"] = True
            last = marker.get("last")
            was = marker.get("was") or ({"offset": offset, "check": last}
                                        if isinstance(last, str) else None)
            next_marker = _with_was(next_marker, was)
        return ScanResult(kind="activity", reason=chunk.reason, next_marker=next_marker)
    if chunk.kind == "partial" and chunk.reason == "line_exceeds_cap":
        return _start_long_line(path, chunk, offset, marker, max_line=max(max_line, cap),
                                pass_bytes=pass_bytes)
    if chunk.kind == "partial":
        return ScanResult(kind="no_news", reason=chunk.reason)
    if chunk.kind != "lines":
        return ScanResult(kind=chunk.kind, reason=chunk.reason)
    return _classify_lines(chunk, offset, [], marker, classify=classify,
                           own_texts=own_texts)


def _with_last(marker: dict[str, Any], line: bytes | None) -> dict[str, Any]:
    """``marker`` with ``last``: :func:`check_of` the whole line that ends at its offset
    (newline included), which ``was`` keeps to recognise old bytes written back."""
    return marker if line is None else {**marker, "last": check_of(line + b"\n")}


def _with_was(marker: dict[str, Any], was: object) -> dict[str, Any]:
    """``marker`` with ``was`` (the pre-shrink ``{"offset", "check"}``) when it is one
    still ahead of the marker."""
    if (isinstance(was, dict) and isinstance(was.get("offset"), int)
            and isinstance(was.get("check"), str) and was["offset"] > marker["offset"]):
        return {**marker, "was": {"offset": was["offset"], "check": was["check"]}}
    return marker


def _restored(path: str, marker: dict[str, Any]) -> ScanResult | None:
    """The marker moved to ``was`` when the line before it is back (see
    :func:`scan_jsonl`), or ``None``. One stat and one read of that line's length
    (at most the scan cap); never raises."""
    was = marker.get("was")
    if not isinstance(was, dict):
        return None
    state = file_state(path)
    target, check = was.get("offset"), was.get("check")
    if (state.kind != "ok" or not isinstance(target, int) or not isinstance(check, str)
            or state.size < target or target <= marker.get("offset", 0)):
        return None
    if not _marker_holds(path, target, check, state.inode):
        return None  # other content: what was written since counts as usual
    return ScanResult(kind="activity", reason="rewritten_restored", next_marker={
        "offset": target, "inode": state.inode, "epoch": marker.get("epoch", 0),
        "check": check, "last": check})


def _marker_holds(path: str, offset: int, check: object, inode: int) -> bool:
    """Whether the bytes before the marker are still those its ``check`` digests."""
    if not isinstance(check, str):
        return True
    length, _, _ = check.partition(":")
    if not length.isdigit() or not 0 < int(length) <= offset:
        return True
    before, _ = read_range(path, offset - int(length), int(length), inode)
    return before is not None and check_of(before) == check


def _start_long_line(path: str, chunk: Chunk, offset: int, marker: dict[str, Any], *,
                     max_line: int, pass_bytes: int) -> ScanResult:
    """A line at ``offset`` holds no newline in the scan's ``cap`` bytes (``chunk.rest``):
    find out by a byte search whether it is longer than ``max_line`` (then pass it,
    decided ``line_too_long``); otherwise start reducing it."""
    epoch = marker.get("epoch", 0)
    inode = chunk.state.inode
    searched = offset + len(chunk.rest)
    tail = (chunk.raw + chunk.rest)[-CHECK_BYTES:]
    found = find_newline(path, searched, offset + max_line + 1 + pass_bytes, inode=inode,
                         check=check_of(tail))
    longer = (found.kind == "found" and found.at - offset > max_line) or (
        found.kind == "none" and found.at - offset > max_line)
    if longer:
        pending = PendingLine(reducer=None, start=offset, inode=inode, epoch=epoch,
                              check=check_of(b""))
        return _passed(found, pending, marker)
    # Up to the bound (or not known yet: its writer is still at it, or the search
    # failed): reduced piece by piece; a later scan passes it if it grows past the bound.
    pending = PendingLine(reducer=LineReducer(), start=offset, inode=inode, epoch=epoch,
                          check=check_of(b""))
    return _feed_long_line(chunk, pending, max_line=max_line)


def _pass_long_line(path: str, pending: PendingLine, marker: dict[str, Any], *,
                    stop: int) -> ScanResult:
    """Search on for the end of a line known to be longer than the bound."""
    found = find_newline(path, pending.resume_at, stop, inode=pending.inode,
                         check=pending.check)
    return _passed(found, pending, marker)


def _passed(found: Newline, pending: PendingLine, marker: dict[str, Any]) -> ScanResult:
    """The result of a byte search for the end of a line decided ``line_too_long``.

    Its end found: the marker moves past it, nothing counted (the next scan
    reads the lines after it). Not found yet: it stays pending, searched up to
    where the search stopped.
    """
    if found.kind in ("missing", "transient"):
        return ScanResult(kind=found.kind, reason=found.reason, pending=pending)
    if found.kind == "rewritten":
        # Changed under the line: the next scan reads it again from the marker.
        return ScanResult(kind="no_news", reason="line_too_long", more=True)
    if found.kind == "none":
        pending.passed = found.at - pending.start
        pending.check = check_of(found.tail)
        more = found.size > found.at
        return ScanResult(kind="no_news", reason="line_too_long", pending=pending, more=more)
    end = found.at + 1
    return ScanResult(
        kind="activity", reason="line_too_long", more=found.size > end,
        next_marker=_with_was({"offset": end, "inode": pending.inode, "epoch": pending.epoch,
                               "check": check_of(found.tail)}, marker.get("was")))


def _feed_long_line(chunk: Chunk, pending: PendingLine, *, max_line: int) -> ScanResult:
    """Feed a piece of a long line that holds no newline yet; it waits for more.

    A line that grows past ``max_line`` while its writer is at it stops
    being reduced: it is passed from then on (``line_too_long``).
    """
    assert pending.reducer is not None
    if pending.reducer.fed + len(chunk.rest) > max_line:
        pending.passed = pending.reducer.fed + len(chunk.rest)
        pending.reducer = None
    else:
        pending.reducer.feed(chunk.rest)
    tail = chunk.rest[-CHECK_BYTES:]
    if len(tail) < CHECK_BYTES:
        tail = (chunk.raw[-CHECK_BYTES:] + tail)[-CHECK_BYTES:]
    pending.check = check_of(tail)
    capped = chunk.reason == "line_exceeds_cap"
    if pending.reducer is None:
        return ScanResult(kind="no_news", pending=pending, more=capped, reason="line_too_long")
    return ScanResult(kind="no_news", pending=pending, more=capped,
                      reason="long_line" if capped else "long_line_waiting")


def _resume_long_line(chunk: Chunk, pending: PendingLine, marker: dict[str, Any], *,
                      classify: LineClassifier, own_texts: OwnTexts,
                      max_line: int) -> ScanResult:
    """Go on with a pending long line from where the last scan left it."""
    assert pending.reducer is not None
    if chunk.kind == "partial":
        return _feed_long_line(chunk, pending, max_line=max_line)
    if chunk.kind != "lines":
        return ScanResult(kind="no_news", reason="long_line_waiting", pending=pending)
    first_start, first = chunk.lines[0]
    if pending.reducer.fed + len(first) > max_line:
        unit = Unit(human=False, reason="line_too_long")
    else:
        pending.reducer.feed(first)
        unit = classify_long_line(classify, pending.reducer)
    if unit.stop:
        pending.stopped = unit
        return ScanResult(kind="no_news", reason=f"stopped:{unit.reason}", pending=pending)
    line_end = first_start + len(first) + 1
    rest = replace(chunk, lines=chunk.lines[1:])
    # A line too long to be typed is not in the span of the turns counted after it.
    span_from = line_end if unit.reason == "line_too_long" else pending.start
    return _classify_lines(rest, first_start, [unit], marker, classify=classify,
                           own_texts=own_texts, end=line_end, span_from=span_from)


def _classify_lines(chunk: Chunk, offset: int, units: list[Unit], marker: dict[str, Any], *,
                    classify: LineClassifier, own_texts: OwnTexts,
                    end: int | None = None, span_from: int | None = None) -> ScanResult:
    """Classify the complete lines of ``chunk`` after ``units`` already decided.

    ``offset`` is where the chunk's read started (its ``raw`` holds the check
    bytes before it); ``end`` where the bytes already decided end (default
    ``offset``). The marker moves to the end of the last line classified,
    never past a line that stops the scan. ``span_from`` is where the first
    unit's line starts (default ``offset``; a long line's start).
    """
    span_from = offset if span_from is None else span_from
    end = offset if end is None else end
    last_line: bytes | None = None
    stopped = "unclassifiable_line"
    for start, line in chunk.lines:
        if line.strip():
            unit = _safe_classify(classify, line)
            if unit.stop:
                stopped = f"stopped:{unit.reason}"
                break
            units.append(unit)
        end = start + len(line) + 1
        last_line = line
    if not units and end == offset:
        return ScanResult(kind="no_news", reason=stopped)
    epoch = marker.get("epoch", 0)
    turns, newest, digests = count_typed(units, own_texts)
    before = len(chunk.raw) - (chunk.end - offset)
    consumed = before + (end - offset)
    new_check = check_of(chunk.raw[:consumed][-CHECK_BYTES:])
    return ScanResult(
        kind="activity", reason="scanned", human_turns=turns,
        next_marker=_with_was(_with_last({"offset": end, "inode": chunk.state.inode,
                                          "epoch": epoch, "check": new_check}, last_line),
                              marker.get("was")),
        occurred_at=(newest if newest is not None else chunk.state.mtime_ms) if turns else None,
        dedupe_id=f"{epoch}:{end}" if turns else None,
        more=chunk.state.size > chunk.end + len(chunk.rest) and end == chunk.end,
        invalid_lines=sum(1 for u in units if u.reason == "invalid_json"),
        typed=digests, span=(span_from, end) if turns else None,
    )


def _safe_classify(classify: LineClassifier, line: bytes) -> Unit:
    try:
        return classify(line)
    except Exception:  # a classifier bug must not stall the monitor
        logger.exception("an upstream classifier raised; the line counts as not human")
        return Unit(human=False, reason="classifier_error")


class StoreHint(msgspec.Struct, frozen=True, kw_only=True):
    """This cadence's batched change answer for one session of a store source.

    Attributes:
        state: ``"ok"`` (``seq`` is current), ``"gone"`` (no such session
            in the store), or ``"failed"`` (the query failed: proves nothing).
        seq: the session's change sequence.
    """

    state: Literal["ok", "gone", "failed"]
    seq: int = 0
