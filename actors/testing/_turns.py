"""The turns a transcript builder can append, shared by every source.

Each is a frozen value; a builder (:mod:`actors.testing._claude` …) turns it
into the rows its tool writes. What each turn means:

* :class:`Typed`: a person typed ``text`` into the session (counts).
* :class:`Reply`: the assistant answered ``text``.
* :class:`ToolCall` / :class:`ToolResult`: the assistant called a tool, and
  its result came back (written as a user row by some tools; never counts).
* :class:`SlashCommand`: a built-in command such as ``/model`` (never counts).
* :class:`Interrupt`: the person interrupted the running turn (never counts).
* :class:`Compaction`: the context was compacted into ``summary``.
* :class:`SubagentRow`: a row a sub-agent wrote into the session.
* :class:`ImageOnly`: a person sent only images (does not count: no text).
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["PIXEL_PNG", "Compaction", "ImageOnly", "Interrupt", "Reply", "SlashCommand",
           "SubagentRow", "ToolCall", "ToolResult", "Turn", "Typed"]


PIXEL_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAA"
             "AABJRU5ErkJggg==")
"""A 1x1 PNG, base64: the image the builders' :class:`ImageOnly` turns send."""


class Typed(msgspec.Struct, frozen=True):
    """A prompt a person typed (``text``: the prompt)."""

    text: str


class Reply(msgspec.Struct, frozen=True):
    """An assistant reply (``text``: its text)."""

    text: str


class ToolCall(msgspec.Struct, frozen=True):
    """The assistant calls tool ``name`` with ``input``; ``call_id`` ties the result to it."""

    name: str
    input: dict[str, Any]
    call_id: str


class ToolResult(msgspec.Struct, frozen=True):
    """The output of the tool call ``call_id``."""

    call_id: str
    output: str


class SlashCommand(msgspec.Struct, frozen=True):
    """A built-in command, ``name`` without its slash (``"model"``), with ``args``."""

    name: str
    args: str = ""


class Interrupt(msgspec.Struct, frozen=True):
    """The person interrupted the running turn."""


class Compaction(msgspec.Struct, frozen=True):
    """The conversation was compacted into ``summary``."""

    summary: str


class SubagentRow(msgspec.Struct, frozen=True):
    """A prompt a sub-agent (not a person) wrote into the session."""

    text: str


class ImageOnly(msgspec.Struct, frozen=True):
    """A person sent ``count`` images and no text."""

    count: int = 1


Turn = Typed | Reply | ToolCall | ToolResult | SlashCommand | Interrupt | Compaction | \
    SubagentRow | ImageOnly
"""Any turn a builder appends."""
