"""Match a turn's text against the fixed prompts a tool sends for a person (a click, ``/init``).

A tool that sends a prompt of its own when a person clicks a button or picks a
menu entry ("Initialize Project", an init command) writes it as an ordinary
user turn. The person chose an action; they did not type the words, so such a
turn is not typed (reason ``tool_prompt``). Each source keeps a small table of
its tool's fixed prompts (``actors/upstream/<source>/prompts.py``), each with
the source file and the versions it was read from; this module compiles such
a table and tells whether a text is one of them.

Matching is exact on the normalized text (:func:`~actors.upstream.common.normalize_text`:
trimmed, every whitespace run one space). A place where the tool fills in a
value (a configured file name, the person's arguments) is written
:data:`FILL` in the table and matches 1 to :data:`FILL_MAX` characters; a
place that holds a program's output (lint errors, a command's output) is
written :data:`REST` and matches any text.

Pure: no I/O, no logging; a compiled :class:`FixedPrompts` is immutable and
thread-safe.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import msgspec

from actors.upstream.common import normalize_text

__all__ = ["FILL", "FILL_MAX", "REST", "FixedPrompt", "FixedPrompts"]

FILL: Final = "{FILL}"
"""Where the tool fills in a value: matches 1 to :data:`FILL_MAX` characters."""

FILL_MAX: Final = 200
"""The longest value a :data:`FILL` matches (a file name, a short argument)."""

REST: Final = "{REST}"
"""Where the tool puts a program's output: matches any text (none included)."""


class FixedPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """One prompt a tool sends by itself.

    Attributes:
        text: the prompt as the tool sends it (any whitespace; :data:`FILL`
            where the tool fills in a value).
        action: what the person did to send it (``"Initialize Project"``, ``"/init"``).
        origin: where the text was read: ``path@version`` in the tool's source
            or package (the versions that send exactly this text).
    """

    text: str
    action: str
    origin: str


class FixedPrompts:
    """A compiled table of fixed prompts.

    Args:
        prompts: the table (any order).

    Raises:
        ValueError: a prompt whose normalized text is empty.
    """

    def __init__(self, prompts: Iterable[FixedPrompt]) -> None:
        self._prompts: tuple[FixedPrompt, ...] = tuple(prompts)
        self._exact: dict[str, FixedPrompt] = {}
        self._patterns: list[tuple[re.Pattern[str], FixedPrompt]] = []
        for prompt in self._prompts:
            normalized = normalize_text(prompt.text)
            if not normalized:
                raise ValueError(f"empty fixed prompt ({prompt.origin})")
            if FILL not in normalized and REST not in normalized:
                self._exact[normalized] = prompt
                continue
            # A REST place takes the spaces around it too (an empty output leaves none).
            normalized = normalized.replace(f" {REST}", REST).replace(f"{REST} ", REST)
            pattern = ".*?".join(
                f".{{1,{FILL_MAX}}}?".join(re.escape(p) for p in part.split(FILL))
                for part in normalized.split(REST))
            self._patterns.append((re.compile(pattern, re.DOTALL), prompt))

    @property
    def prompts(self) -> tuple[FixedPrompt, ...]:
        """The table, in the order given."""
        return self._prompts

    def match(self, text: str | None) -> FixedPrompt | None:
        """The fixed prompt ``text`` is, or ``None``.

        Args:
            text: a turn's text (normalized or not).

        Returns:
            The table entry whose normalized text equals ``text``'s (its
            :data:`FILL` places matching any 1 to :data:`FILL_MAX` characters,
            its :data:`REST` places any text), or ``None``. Pure; thread-safe; non-blocking.
        """
        normalized = normalize_text(text)
        if not normalized:
            return None
        exact = self._exact.get(normalized)
        if exact is not None:
            return exact
        for pattern, prompt in self._patterns:
            if pattern.fullmatch(normalized):
                return prompt
        return None
