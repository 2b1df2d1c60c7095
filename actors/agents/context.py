"""The context a prompt hook hands the manager's model: notices and what changed (pure).

Each pending notice is printed in the seed's text, followed by a compact
summary of the changes behind it (what, which actor, when; the signal log
holds no message text), the adopted session's tool and transcript, and how
to get more. With ``ssa hook --excerpt N`` a typed upstream turn also shows
its first ``N`` characters, read from the tool's transcript at delivery. The whole text stays under
:data:`MAX_CONTEXT_CHARS`, below Claude Code's 10,000-character cap on hook
output: notices that do not fit are left pending for the next turn, and
only the notices printed are acknowledged.

The wording is factual, not imperative, because injected text framed as a
command can trip a model's prompt-injection defences.
"""

from __future__ import annotations

import time
import unicodedata
from typing import NamedTuple

import msgspec

from actors.upstream.sources import find_source

__all__ = ["MAX_CONTEXT_CHARS", "MAX_EVENTS_PER_NOTICE", "NoticeView", "SummaryEvent",
           "render_context", "state_words"]

MAX_CONTEXT_CHARS = 9000
"""Longest context printed, in characters (Claude Code caps hook output at 10,000)."""
MAX_EVENTS_PER_NOTICE = 5
"""Changes summarized under one notice; the rest are counted, with how to read them."""


class SummaryEvent(NamedTuple):
    """One change behind a notice: metadata only."""

    sequence: int
    kind: str
    actor_type: str
    occurred_at: int
    """Epoch milliseconds."""
    summary: str
    typed: tuple[str, ...] = ()
    """With ``ssa hook --excerpt N``: the typed turns' first characters, read from the
    tool's transcript now (never stored)."""
    typed_note: str | None = None
    """Why no excerpt is shown for an upstream turn (``changed``, ``gone``, ...)."""


class NoticeView(NamedTuple):
    """A pending notice and what the hook knows about it.

    Attributes:
        text: the notice line exactly as the gateway queues it.
        target_key: the session it is about.
        changes_since: its ``changesSince`` base.
        events: up to :data:`MAX_EVENTS_PER_NOTICE` changes after it, oldest first.
        total: how many changes there are after it in all.
        source: the adopted session's tool (``"claude"``, ...), or ``None``.
        path: its transcript (OpenCode: the database), or ``None``.
        cwd: its working directory, or ``None``.
    """

    text: str
    target_key: str
    changes_since: int
    events: tuple[SummaryEvent, ...] = ()
    total: int = 0
    source: str | None = None
    path: str | None = None
    cwd: str | None = None
    state: str | None = None
    """Where the session's tool stands, in words (``"waiting for permission since
    12:03:04 UTC"``), when its hooks report it."""
    name: str | None = None
    """Its name in its tool (its title, else the first words typed there), read
    from the tool's files when shown and never stored."""


_NOTES = {"changed": "the transcript no longer holds it there",
          "gone": "the transcript cannot be read",
          "too_large": "too much to read back",
          "unsupported": "this tool's turns cannot be read back yet",
          "no_pointer": "recorded without a pointer to its transcript"}


def _quoted(text: str) -> str:
    """``text`` as a JSON string: quoted, control characters and invisible format characters
    (bidirectional overrides such as U+202E) escaped, one line (pure)."""
    quoted = msgspec.json.encode(text).decode()
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) == "Cf" else ch
                   for ch in quoted)


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ms / 1000))


def _block(notice: NoticeView) -> str:
    lines = [notice.text]
    for event in notice.events:
        lines.append(f"  #{event.sequence} {event.kind} by {event.actor_type} at "
                     f"{_when(event.occurred_at)}: {event.summary}")
        lines.extend(f"    typed: {_quoted(text)}" for text in event.typed)
        if event.typed_note is not None:
            why = _NOTES.get(event.typed_note, event.typed_note)
            lines.append(f"    (typed text not shown: {why})")
    where = []
    if notice.source is not None:
        source = find_source(notice.source)
        tool = source.title if source is not None else notice.source
        where.append(f"{tool} session {_quoted(notice.name)}" if notice.name
                     else f"{tool} session")
    if notice.cwd:
        where.append(f"in {notice.cwd}")
    if notice.path:
        where.append(f"transcript {notice.path}")
    if notice.state:
        where.append(f"now {notice.state}")
    if where:
        lines.append("  (" + ", ".join(where) + ")")
    more = notice.total - len(notice.events)
    if more > 0:
        lines.append(f"  {more} more change{'s' if more != 1 else ''}: the session_status tool "
                     f"(sessionKey, changesSince {notice.changes_since}) or "
                     f"`ssa status {notice.target_key} --changes-since {notice.changes_since}`.")
    return "\n".join(lines)


_STATE_WORDS = {"busy": "busy", "idle": "idle", "finished": "finished its turn",
                "failed": "failed"}


def state_words(state: str, detail: str | None, since: int) -> str:
    """A worker state in a person's words, e.g. ``waiting for permission since 12:03:04 UTC``
    (pure)."""
    if state == "waiting":
        what = "waiting for permission" if detail == "permission" else "waiting for input"
    elif state == "finished" and detail == "ended":
        what = "ended (the session was closed)"
    else:
        what = _STATE_WORDS.get(state, state)
    return f"{what} since {time.strftime('%H:%M:%S UTC', time.gmtime(since / 1000))}"


def _units(text: str) -> int:
    """The length of ``text`` as JavaScript counts it (UTF-16 code units): the tools'."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def render_context(watcher_key: str, notices: list[NoticeView],
                   limit: int = MAX_CONTEXT_CHARS, *,
                   pending: int | None = None) -> tuple[str, list[str]]:
    """The context for the watcher's next turn, and the notice texts it shows.

    Args:
        watcher_key: the manager's own session key (it names itself to the model).
        notices: the pending notices, oldest first.
        limit: the longest text, in UTF-16 code units (what the tools, written
            in JavaScript, count).
        pending: how many notices are open in all (``notices`` may hold
            fewer: a queue shows at most its limit); default ``len(notices)``.

    Returns:
        ``(text, shown)``: ``text`` is ``""`` when there is nothing to show;
        ``shown`` lists the notice texts it contains, which are the only ones
        the caller may acknowledge. A notice whose block alone is longer than
        ``limit`` is shown as its notice line only.

    Pure; any thread.
    """
    if not notices:
        return "", []
    head = (f"Session state: sessions you watch changed since your last turn (you are "
            f"{watcher_key}; changes by you are not listed). Each line below is one session's "
            "notice and a summary of its changes; no message text is recorded.")
    parts = [head]
    used = _units(head)
    shown: list[str] = []
    for notice in notices:
        block = _block(notice)
        if used + 1 + _units(block) > limit - 200:
            block = notice.text
        if used + 1 + _units(block) > limit - 200:
            break
        parts.append(block)
        used += 1 + _units(block)
        shown.append(notice.text)
    left = max(len(notices) if pending is None else pending, len(notices)) - len(shown)
    if left > 0:
        parts.append(f"{left} more notice{'s are' if left != 1 else ' is'} pending and "
                     "will be shown at the next turns (or call the pending_notices tool).")
    return "\n".join(parts), shown
