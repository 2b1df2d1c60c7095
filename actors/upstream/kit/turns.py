"""The turns a transcript builder can append, shared by every source.

Each is a frozen value; a builder (:mod:`actors.upstream.claude.kit` …) turns it
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


def _text(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")


def _name(value: object, name: str) -> None:
    _text(value, name)
    assert isinstance(value, str)
    if not value.strip():
        raise ValueError(f"{name} must not be empty")


class Typed(msgspec.Struct, frozen=True):
    """A prompt a person typed (``text``: the prompt).

    Raises:
        TypeError: ``text`` is not a ``str`` (every turn checks its fields so).
    """

    text: str

    def __post_init__(self) -> None:
        """Check the field types."""
        _text(self.text, "text")


class Reply(msgspec.Struct, frozen=True):
    """An assistant reply (``text``: its text)."""

    text: str

    def __post_init__(self) -> None:
        """Check the field types."""
        _text(self.text, "text")


class ToolCall(msgspec.Struct, frozen=True):
    """The assistant calls tool ``name`` with ``input``; ``call_id`` ties the result to it."""

    name: str
    input: dict[str, Any]
    call_id: str

    def __post_init__(self) -> None:
        """Check the fields: non-empty ``name`` and ``call_id``, a dict ``input``."""
        _name(self.name, "name")
        _name(self.call_id, "call_id")
        if not isinstance(self.input, dict):
            raise TypeError(f"input must be a dict, not {type(self.input).__name__}")


class ToolResult(msgspec.Struct, frozen=True):
    """The output of the tool call ``call_id``."""

    call_id: str
    output: str

    def __post_init__(self) -> None:
        """Check the field types."""
        _name(self.call_id, "call_id")
        _text(self.output, "output")


class SlashCommand(msgspec.Struct, frozen=True):
    """A built-in command, ``name`` without its slash (``"model"``), with ``args``.

    Raises:
        ValueError: ``name`` is empty, starts with ``/``, or is ``skill:``
            without a skill name.
    """

    name: str
    args: str = ""

    def __post_init__(self) -> None:
        """Check the fields."""
        _name(self.name, "name")
        _text(self.args, "args")
        if self.name.startswith("/"):
            raise ValueError(f"name is the command without its slash: {self.name[1:]!r}")
        if self.name.startswith("skill:") and not self.name.removeprefix("skill:").strip():
            raise ValueError("skill:NAME needs a skill name")


class Interrupt(msgspec.Struct, frozen=True):
    """The person interrupted the running turn."""


class Compaction(msgspec.Struct, frozen=True):
    """The conversation was compacted into ``summary``."""

    summary: str

    def __post_init__(self) -> None:
        """Check the field types."""
        _text(self.summary, "summary")


class SubagentRow(msgspec.Struct, frozen=True):
    """A prompt a sub-agent (not a person) wrote into the session."""

    text: str

    def __post_init__(self) -> None:
        """Check the field types."""
        _text(self.text, "text")


class ImageOnly(msgspec.Struct, frozen=True):
    """A person sent ``count`` images and no text.

    Raises:
        ValueError: ``count`` is below 1; TypeError: it is not an ``int``.
    """

    count: int = 1

    def __post_init__(self) -> None:
        """Check ``count``."""
        if isinstance(self.count, bool) or not isinstance(self.count, int):
            raise TypeError(f"count must be an int, not {type(self.count).__name__}")
        if self.count < 1:
            raise ValueError("an image-only turn sends at least one image")


Turn = Typed | Reply | ToolCall | ToolResult | SlashCommand | Interrupt | Compaction | \
    SubagentRow | ImageOnly
"""Any turn a builder appends."""
