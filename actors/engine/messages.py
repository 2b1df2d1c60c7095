"""Messages between the gateway's actors (frozen, tagged msgspec Structs).

Each actor's inbound protocol is one union alias. Fields are tuples, never
lists: Pykka does not copy messages between threads (style anchors §7.2).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from persistence import NoticeDescriptor

__all__ = [
    "CursorMessage",
    "Deliver",
    "Drain",
    "DrainOutcome",
    "EnqueueEvent",
    "PendingTexts",
    "Register",
    "Reset",
    "SessionMessage",
    "TakeMessages",
    "Wake",
    "WakerMessage",
]

class _Message(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every actor message."""


# --- session actor -----------------------------------------------------------


class EnqueueEvent(_Message, frozen=True, tag="session.enqueue-event"):
    """Queue an ordinary system event (answers ``bool``: newly queued)."""

    text: str
    context_key: str | None = None


class PendingTexts(_Message, frozen=True, tag="session.pending"):
    """Answer the queued texts without consuming them."""


class Drain(_Message, frozen=True, tag="session.drain"):
    """The watcher's turn: consume the queue and acknowledge (answers ``DrainOutcome``).

    ``only``: consume just the queued entries with these texts (what the
    watcher was shown); ``None`` consumes everything.
    """

    only: tuple[str, ...] | None = None


class Reset(_Message, frozen=True, tag="session.reset"):
    """New incarnation: drop watcher cursors and queued notices (answers ``None``)."""

    session_id: str | None = None


class Deliver(_Message, frozen=True, tag="session.deliver"):
    """Default ``sessions_send`` dispatcher: put text on the inbox (answers ``True``)."""

    text: str


class TakeMessages(_Message, frozen=True, tag="session.take-messages"):
    """Consume and answer the inbox texts."""


class DrainOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What a drain consumed, and the follow-up notices whose wakes the gateway runs."""

    texts: tuple[str, ...]
    follow_ups: tuple[NoticeDescriptor, ...]
    unacknowledged: int = 0
    """Notices kept back because their acknowledgement could not be written."""


SessionMessage = EnqueueEvent | PendingTexts | Drain | Reset | Deliver | TakeMessages

# --- cursor actor ------------------------------------------------------------


class Register(_Message, frozen=True, tag="cursor.register"):
    """Register this watch at the target's head (answers ``bool``).

    ``since``: a new watch starts at that state version instead (see
    :class:`persistence.RegisterWatch`).
    """

    provenance: Literal["explicit", "ambient-group"] = "explicit"
    since: int | None = None


CursorMessage = Register

# --- waker actor -------------------------------------------------------------


class Wake(_Message, frozen=True, tag="waker.wake"):
    """Call the host's ``on_wake`` for a watcher (answers ``None``)."""

    watcher_key: str


WakerMessage = Wake

# Typed decoders built at import time: a mis-tagged union fails here, not in use.
session_decoder = msgspec.json.Decoder(SessionMessage)
cursor_decoder = msgspec.json.Decoder(CursorMessage)
waker_decoder = msgspec.json.Decoder(WakerMessage)
