"""Which OpenCode messages a person typed (anchor §3.17, formats doc §4.3, §4.5): pure rules.

:func:`classify_messages` decides a session's messages (read by
:mod:`actors.upstream.opencode.store`) against the marker's last human message,
suppressing replays. Pure (no I/O, no logging), thread-safe.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Final

from actors.upstream.common import Unit, gateway_envelope_reason, normalize_text
from actors.upstream.opencode.copies import is_copy
from actors.upstream.opencode.prompts import OPENCODE_PROMPTS
from actors.upstream.opencode.rows import (
    _MEDIA_PDF,
    OpenCodeClassification,
    OpenCodeMessage,
    OpenCodePart,
    SourceText,
    _sort_key,
)

__all__ = ["REPLAY_WINDOW", "SHELL_SENTINEL", "classify_messages", "unwrapped_id"]

SHELL_SENTINEL: Final = "The following tool was executed by the user"
"""The text OpenCode stores on the user message of a ``!cmd`` shell run."""

REPLAY_WINDOW: Final = 50
"""How many previous user messages a human text is checked against (anchor §3.17)."""

_ID_WRAP: Final = 1 << 48  # OpenCode ids keep 6 bytes of created_ms * 0x1000 + counter
_ID_SHAPE: Final = re.compile(r"msg_([0-9a-f]{12})")


def classify_messages(
    messages: Sequence[OpenCodeMessage],
    *,
    last_human_message_id: str | None,
    replay_window: int = REPLAY_WINDOW,
    refusal: str | None = None,
    forked_at: int | None = None,
) -> OpenCodeClassification:
    """Decide, per message, whether a person typed it.

    Anchor §3.17 "OpenCode"; formats doc §4.3 (which user messages are
    human) and §4.5 (how OpenClaw classifies them); the reason codes are
    listed in the module docstring.

    A direct-human message newer than ``last_human_message_id`` always
    becomes the new ``last_human_message_id`` ("consumed"), even when it is
    suppressed as replay, so it is never reconsidered. A staged user row with
    no parts, or with no visible text yet, is neither human nor consumed: when
    its text lands (the sequence advances) it counts once.

    Args:
        messages: a session's messages (:func:`load_messages`); sorted here by
            (created, id) anyway.
        last_human_message_id: the marker's newest consumed human message, or
            ``None`` to consider every message.
        replay_window: how many previous user messages (human or not) a text
            is compared with to suppress compaction replays; 0 disables it.
        refusal: why nothing of this session counts (``child_session`` for a
            subagent child, ``program_session`` for ``opencode run``), or
            ``None``: every message carries that reason.
        forked_at: when the session was created if it is a fork
            (:func:`~actors.upstream.opencode.copies.fork_time`), or ``None``:
            a user message created before it is a copy (``copied_row``).

    Returns:
        Every message's decision and the next ``last_human_message_id``.
        Human units carry the normalized text and ``occurred_at`` (created, ms).

    Raises:
        ValueError: ``replay_window`` is negative.

    Pure: no I/O, no logging, thread-safe, non-blocking.
    """
    if replay_window < 0:
        raise ValueError(f"replay_window must be >= 0, got {replay_window}")
    ordered = sorted(messages, key=_sort_key)
    if refusal is not None:
        return OpenCodeClassification(
            decisions=tuple(
                (m.id, Unit(human=False, reason=refusal, occurred_at=m.created))
                for m in ordered
            ),
            last_human_message_id=last_human_message_id,
        )
    marker = last_human_message_id
    marker_ref = _marker_reference(ordered, marker)
    last, last_ref = marker, marker_ref
    window: deque[tuple[str | None, str | None]] = deque(maxlen=replay_window)
    decisions: list[tuple[str, Unit]] = []
    reply_failed = False  # the message just before is an assistant reply that failed
    for message in ordered:
        after_failure, reply_failed = reply_failed, message.role == "assistant" and message.failed
        if message.undecodable or message.role != "user":
            reason = "undecodable" if message.undecodable else "not_user"
            decisions.append((message.id, Unit(human=False, reason=reason,
                                               occurred_at=message.created)))
            if message.role == "user":
                window.append((None, None))  # its text is unknown, but it is a user message
            continue
        if is_copy(message.created, forked_at):
            unit = Unit(human=False, reason="copied_row", occurred_at=message.created)
        elif not message.parts:
            unit = Unit(human=False, reason="no_parts", occurred_at=message.created)
        else:
            text = _direct_human_text(message)
            command = None if text is None else OPENCODE_PROMPTS.find(text)
            if command is not None and command.args:
                text = command.args  # /init's template around the person's own words
            envelope = None if text is None else gateway_envelope_reason(text)
            if text is None:
                unit = Unit(human=False, reason=_not_human_reason(message),
                            occurred_at=message.created)
            elif command is not None and not command.args:  # OpenCode's words only
                unit = Unit(human=False, reason="tool_prompt", occurred_at=message.created)
            elif envelope is not None:  # POLICY: relayed by a gateway, not typed
                unit = Unit(human=False, reason=envelope, occurred_at=message.created)
            elif marker is not None and not _is_after(
                message.id, message.created, marker, marker_ref
            ):
                unit = Unit(human=False, reason="already_seen", occurred_at=message.created)
            else:
                if last is None or _is_after(message.id, message.created, last, last_ref):
                    last, last_ref = message.id, message.created
                if _is_replay(text, message.model, window, after_failure):
                    unit = Unit(human=False, reason="replay", occurred_at=message.created)
                else:
                    unit = Unit(human=True, reason="typed", text=text,
                                occurred_at=message.created)
        decisions.append((message.id, unit))
        window.append((_replay_text(message), message.model))
    return OpenCodeClassification(decisions=tuple(decisions), last_human_message_id=last)


def _is_replay(text: str, model: str | None, window: Iterable[tuple[str | None, str | None]],
               after_failure: bool) -> bool:
    """Whether a text that repeats an earlier user message is compaction replay.

    It is, unless the store proves a person sent it again: right after an
    assistant reply that failed or came back empty, or with another model
    than the earlier message had (a re-send after switching model).
    """
    models = [m for t, m in window if t == text]
    if not models or after_failure:
        return False
    return not (model is not None and all(m is not None and m != model for m in models))


def _is_media(part: OpenCodePart) -> bool:
    return part.type == "file" and part.mime is not None and (
        part.mime.startswith("image/") or part.mime == _MEDIA_PDF
    )


def _continues_compaction(part: OpenCodePart) -> bool:
    return part.metadata is not None and part.metadata.get("compaction_continue") is True


def _source_spans(message: OpenCodeMessage) -> list[SourceText]:
    spans = [p.source.text for p in message.parts if p.source is not None
             and p.source.text is not None]
    return sorted(spans, key=lambda span: -span.start)  # applied from the end


def _cut_span(text: str, span: SourceText) -> str:
    """Remove ``span`` from ``text`` if it is there; offsets are UTF-16 units (POLICY)."""
    units = text.encode("utf-16-le", "surrogatepass")
    start, end = span.start * 2, span.end * 2
    if span.start < 0 or end < start or end > len(units):
        return text
    if units[start:end].decode("utf-16-le", "surrogatepass") != span.value:
        return text
    return (units[:start] + units[end:]).decode("utf-16-le", "surrogatepass")


def _visible_text(part: OpenCodePart, spans: list[SourceText]) -> str | None:
    if (
        part.type != "text"
        or part.text is None
        or part.synthetic is True
        or part.ignored is True
        or _continues_compaction(part)
    ):
        return None
    text = part.text
    for span in spans:
        text = _cut_span(text, span)
    return text


def _direct_human_text(message: OpenCodeMessage) -> str | None:
    if any(p.type == "compaction" or _continues_compaction(p) for p in message.parts):
        return None
    spans = _source_spans(message)
    texts = [t for p in message.parts if (t := _visible_text(p, spans)) is not None]
    if not texts:
        return None
    text = normalize_text("\n".join(texts))
    return None if not text or text == SHELL_SENTINEL else text


def _replay_text(message: OpenCodeMessage) -> str | None:
    """What a later compaction replay of this user message would read as."""
    spans = _source_spans(message)
    texts: list[str] = []
    for part in message.parts:
        visible = _visible_text(part, spans)
        if visible is not None:
            texts.append(visible)
        elif _is_media(part):
            name = part.filename if part.filename is not None else "file"
            texts.append(f"[Attached {part.mime}: {name}]")
    return normalize_text("\n".join(texts)) if texts else None


def _not_human_reason(message: OpenCodeMessage) -> str:
    parts = message.parts
    if any(p.type == "compaction" or _continues_compaction(p) for p in parts):
        return "compaction"
    if any(p.type == "text" and normalize_text(p.text) == SHELL_SENTINEL for p in parts):
        return "shell"
    if any(p.type == "subtask" for p in parts):
        return "subtask"
    if any(_is_media(p) for p in parts):
        return "image_only"
    if any(p.type == "file" for p in parts):
        return "file_mention_only"
    if any(p.type == "text" and (p.synthetic is True or p.ignored is True) for p in parts):
        return "synthetic"
    return "empty_text"


def _marker_reference(ordered: list[OpenCodeMessage], marker: str | None) -> int | None:
    """The time to unwrap the marker id around: its message's, else the newest message's."""
    if marker is None or not ordered:
        return None
    for message in ordered:
        if message.id == marker:
            return message.created
    return ordered[-1].created


def unwrapped_id(message_id: str, reference_ms: int | None) -> int | None:
    """The full ``created_ms * 0x1000 + counter`` of an OpenCode id (POLICY: id wrap).

    Args:
        message_id: an id in OpenCode's ``msg_<12 hex>…`` shape.
        reference_ms: a time near the id's creation (epoch ms), to unwrap the
            48 stored bits around.

    Returns:
        The full value, or ``None`` for another shape or no reference. Pure.
    """
    match = _ID_SHAPE.match(message_id)
    if match is None or reference_ms is None:
        return None
    low = int(match.group(1), 16)
    approx = reference_ms * 0x1000
    base = approx - approx % _ID_WRAP + low
    return min((base - _ID_WRAP, base, base + _ID_WRAP), key=lambda c: abs(c - approx))


def _is_after(
    message_id: str, created: int, other_id: str, other_reference: int | None
) -> bool:
    """``message_id`` is newer than ``other_id``: string order unless the ids wrapped."""
    mine, theirs = unwrapped_id(message_id, created), unwrapped_id(other_id, other_reference)
    if mine is None or theirs is None or mine == theirs:
        return message_id > other_id
    return mine > theirs
