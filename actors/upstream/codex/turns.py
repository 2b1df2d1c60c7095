"""Codex turns another program started: a ``codex queue`` message is not typed (issue 22, class 4).

``codex queue --thread ID --message TEXT`` (Codex 0.169.0) stores the message
in ``$CODEX_HOME/queue_1.sqlite``; the thread's running TUI (or app server)
starts a turn on it once the thread is idle. Its rows are those of a typed
prompt (an ``item_completed`` ``UserMessage`` with a ``client_id``, the
``response_item`` copy with ``provenance: user``), with one difference: the
turn's ``task_started`` event records who started the turn,
``turn_attribution.turn_trigger``, ``"user"`` for a prompt submitted from the
composer and ``"queue"`` for a queued message. The field is the app-server's
``TurnStartParams.turn_trigger`` ("Optional source classification for the
caller that starts this turn. Ignored when this request steers an
already-active turn."; ``codex-rs/app-server-protocol/src/protocol/v2.rs``, in
0.169.0's own schema, ``codex app-server generate-ts``: ``v2/TurnStartParams.ts``),
persisted as the ``TurnAttribution`` of the turn's ``task_started``.

The rule (:func:`queued_message`): the **first** ``UserMessage`` of a turn
whose trigger is exactly ``"queue"`` is ``queued_message`` (not typed). A later
``UserMessage`` of the same turn would be a steer (input added to the running
turn), which keeps the trigger of the turn it joins, so it keeps its own
decision. Any other trigger, none at all (builds before the field, legacy
rollouts), or a turn whose ``task_started`` cannot be found decides nothing:
the message keeps the line classifier's decision (conservative: a prompt is
never dropped for lack of evidence).

The line classifier (:func:`~actors.upstream.codex.classify.classify_codex_line`) sees
one line; the trigger sits on an earlier line of the same file. The classifier
of one transcript (:func:`codex_turn_classifier`) keeps the triggers of the
turns it has read; a ``UserMessage`` whose turn started before the lines it was
given (a scan that began between the two lines) is looked up in the file:
backwards from its end, at most :data:`LOOKBACK_BYTES`.

``$CODEX_HOME/history.jsonl`` (the composer's message history,
``codex-rs/message-history/src/lib.rs``, appended by the TUI for each
submitted prompt, ``tui/src/chatwidget`` ``append_message_history_entry``) tells
the two apart too (the typed prompts are there, the queued message is not),
but it is one file for every session, written asynchronously, trimmed at
``[history] max_bytes`` and absent under ``[history] persistence = "none"``;
the trigger is in the rollout itself and does not depend on that setting, so
only the trigger is read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import msgspec

from actors.upstream.codex.classify import classify_codex_line, line_kind
from actors.upstream.common import Unit
from actors.upstream.files import file_state, read_range
from actors.upstream.kindlog import log_unknown_kind

__all__ = ["LOOKBACK_BYTES", "QUEUE_TRIGGER", "TurnStart", "UserItem", "codex_turn_classifier",
           "find_turn", "queued_message", "turn_start", "user_item"]

logger = logging.getLogger(__name__)
_classify_logger = logging.getLogger("actors.upstream.codex.classify")
"""Where an unknown line kind is logged (once per process: :mod:`actors.upstream.kindlog`)."""

QUEUE_TRIGGER = "queue"
"""The ``turn_trigger`` of a turn Codex 0.169.0 started on a ``codex queue`` message."""

LOOKBACK_BYTES = 8 << 20
"""Most bytes read backwards from a rollout's end to find a turn's ``task_started``."""

_CHUNK = 256 << 10
_MAX_TURNS = 256
"""Most turns one classifier remembers (a long file read from its start keeps the newest)."""
_MAX_LOOKUPS = 2
"""Most turns one classifier looks up in the file (:func:`find_turn`)."""


class TurnStart(msgspec.Struct, frozen=True):
    """A turn's ``task_started`` event: its id and who started it.

    Attributes:
        turn_id: the turn's id.
        trigger: ``turn_attribution.turn_trigger`` (``"user"``, ``"queue"``...), or
            ``None`` when the event has none.
    """

    turn_id: str
    trigger: str | None


class UserItem(msgspec.Struct, frozen=True):
    """An ``item_completed`` ``UserMessage`` event's place: its turn and item id.

    Attributes:
        turn_id: the turn it belongs to.
        item_id: the item's id, or ``None`` when the row has none.
    """

    turn_id: str
    item_id: str | None


class _Attribution(msgspec.Struct):
    turn_trigger: object = None


class _Item(msgspec.Struct):
    type: object = None
    id: object = None


class _Payload(msgspec.Struct):
    type: object = None
    turn_id: object = None
    turn_attribution: _Attribution | None = None
    item: _Item | None = None


class _Line(msgspec.Struct):
    type: object = None
    payload: _Payload | None = None


_LINE = msgspec.json.Decoder(_Line)
_DECODE_ERRORS = (msgspec.MsgspecError, RecursionError, ValueError, TypeError)


def _payload(line: bytes, needle: bytes) -> _Payload | None:
    if needle not in line:
        return None
    try:
        row = _LINE.decode(line)
    except _DECODE_ERRORS:
        return None
    if row.type != "event_msg" or row.payload is None:
        return None
    return row.payload


def turn_start(line: bytes) -> TurnStart | None:
    """The turn a ``task_started`` line starts, or ``None`` for any other line.

    Args:
        line: one rollout line (any bytes).

    Returns:
        Its :class:`TurnStart` (``trigger`` ``None`` when it names none), or
        ``None`` when the line is not an ``event_msg`` ``task_started`` with a
        string ``turn_id``.

    Pure, thread-safe, never raises.
    """
    payload = _payload(line, b"task_started")
    if payload is None or payload.type != "task_started" or not isinstance(payload.turn_id, str):
        return None
    trigger = payload.turn_attribution.turn_trigger if payload.turn_attribution else None
    return TurnStart(payload.turn_id, trigger if isinstance(trigger, str) else None)


def user_item(line: bytes) -> UserItem | None:
    """Where an ``item_completed`` ``UserMessage`` line belongs, or ``None`` for others.

    Args:
        line: one rollout line (any bytes).

    Returns:
        Its :class:`UserItem`, or ``None`` when the line is not an ``event_msg``
        ``item_completed`` of a ``UserMessage`` with a string ``turn_id``.

    Pure, thread-safe, never raises.
    """
    payload = _payload(line, b"UserMessage")
    if payload is None or payload.type != "item_completed" or payload.item is None:
        return None
    if payload.item.type != "UserMessage" or not isinstance(payload.turn_id, str):
        return None
    item_id = payload.item.id
    return UserItem(payload.turn_id, item_id if isinstance(item_id, str) else None)


def queued_message(trigger: str | None, first_item: str | None, item: UserItem) -> bool:
    """Whether a ``UserMessage`` is the message a ``codex queue`` turn was started on.

    Args:
        trigger: the ``turn_trigger`` of the message's turn (``None``: unknown or none).
        first_item: the item id of the turn's first ``UserMessage`` (``None``: unknown).
        item: the message.

    Returns:
        ``True`` only when ``trigger`` is exactly :data:`QUEUE_TRIGGER` and the
        message is the turn's first ``UserMessage`` (its id is ``first_item``);
        a later one is a steer into that turn. Pure, thread-safe.
    """
    return (trigger == QUEUE_TRIGGER and item.item_id is not None
            and item.item_id == first_item)


def find_turn(path: str, turn_id: str, *, limit: int = LOOKBACK_BYTES
              ) -> tuple[TurnStart, str | None] | None:
    """Find turn ``turn_id``'s ``task_started`` in the rollout ``path``, from its end back.

    Args:
        path: the rollout file.
        turn_id: the turn to find.
        limit: most bytes read, backwards from the end of the file.

    Returns:
        ``(start, first_item)``: the turn's :class:`TurnStart` and the item id of
        its first ``UserMessage`` after it (``None`` when there is none in the
        file yet); ``None`` when the file cannot be read, the turn's start is not
        within ``limit`` bytes of its end, or another turn starts before the
        turn's first ``UserMessage`` with none of its own in between (its start
        is not in the file).

    Blocks on bounded reads (at most ``limit`` bytes, in 256 KiB pieces; a line
    longer than ``limit`` is never seen); thread-safe; never raises.
    """
    state = file_state(path)
    if state.kind != "ok":
        return None
    needle = turn_id.encode()
    end = state.size
    carry = b""
    first_item: str | None = None
    seen = False
    while end > 0 and state.size - end < limit:
        start = max(0, end - min(_CHUNK, limit - (state.size - end)))
        data, _ = read_range(path, start, end - start, state.inode)
        if data is None:
            return None
        data += carry
        lines = data.split(b"\n")
        carry = lines[0] if start > 0 else b""
        for line in reversed(lines[1:] if start > 0 else lines):
            if needle not in line:
                if seen and b"task_started" in line and turn_start(line) is not None:
                    return None  # an earlier turn's start, before any of ours: none
                continue
            found = turn_start(line)
            if found is not None and found.turn_id == turn_id:
                return found, first_item
            item = user_item(line)
            if item is not None and item.turn_id == turn_id:
                first_item = item.item_id  # read backwards: the last one kept is the first
                seen = True
        if len(carry) > limit:
            return None
        end = start
    return None


def codex_turn_classifier(path: str) -> Callable[[bytes], Unit]:
    """:func:`~actors.upstream.codex.classify.classify_codex_line` for the rollout ``path``, where
    the message of a turn ``codex queue`` started is ``queued_message``.

    The returned callable remembers the turns of the lines it is given, in order
    (one scan, or ``ssa classify``'s walk of the whole file); a typed
    ``UserMessage`` of a turn it did not see start, before it has read any
    ``task_started`` (only the turn open where its lines begin can have started
    earlier), is looked up with :func:`find_turn` (a bounded read of the file's
    end), each turn once and at most :data:`_MAX_LOOKUPS` turns, so a scan reads
    at most that many times :data:`LOOKBACK_BYTES` more.
    A line of a kind Codex is not known to write (``unknown_kind``) is logged once per
    process, its kind's name only (:func:`~actors.upstream.kindlog.log_unknown_kind`).
    Creating it reads nothing. The callable runs in the caller's thread, is not thread-safe (one
    per scan), and never raises; it logs no text.
    """
    turns: dict[str, TurnStart] = {}
    first_items: dict[str, str | None] = {}
    looked_up: set[str] = set()
    started = False

    def remember(start: TurnStart, first_item: str | None) -> None:
        turns[start.turn_id] = start
        first_items[start.turn_id] = first_item
        if len(turns) > _MAX_TURNS:
            oldest = next(iter(turns))
            del turns[oldest]
            first_items.pop(oldest, None)

    def classify(line: bytes) -> Unit:
        nonlocal started
        start = turn_start(line)
        if start is not None:
            started = True
            remember(start, None)
            return classify_codex_line(line)
        unit = classify_codex_line(line)
        if unit.reason == "unknown_kind":
            log_unknown_kind(_classify_logger, "Codex", line_kind(line))
        if not unit.human:
            return unit
        item = user_item(line)
        if item is None:
            return unit
        if item.turn_id not in turns:
            # Only the turn open where the lines began can have started before them:
            # look up turns only until the first start is read, each once, at most twice.
            if started or item.turn_id in looked_up or len(looked_up) >= _MAX_LOOKUPS:
                return unit
            looked_up.add(item.turn_id)
            found = find_turn(path, item.turn_id)
            if found is None:
                return unit  # nothing proves who started the turn: keep the decision
            remember(*found)
        if first_items.get(item.turn_id) is None:
            first_items[item.turn_id] = item.item_id
        if queued_message(turns[item.turn_id].trigger, first_items[item.turn_id], item):
            logger.debug("a Codex turn started by codex queue: its message is not typed")
            return Unit(human=False, reason="queued_message", occurred_at=unit.occurred_at)
        return unit

    return classify
