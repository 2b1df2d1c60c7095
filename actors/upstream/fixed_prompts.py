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
written :data:`REST` and matches any text; the place where a command puts the
arguments the person typed after it (``/init focus on tests``) is written
:data:`ARGS` (at most one per prompt), matches any text, and is returned by
:meth:`FixedPrompts.find`: those words are the person's.

Pure: no I/O, no logging; a compiled :class:`FixedPrompts` is immutable and
thread-safe.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import msgspec

from actors.upstream.common import normalize_text

__all__ = ["ARGS", "FILL", "FILL_MAX", "REST", "FixedPrompt", "FixedPrompts", "PromptMatch"]

FILL: Final = "{FILL}"
"""Where the tool fills in a value: matches 1 to :data:`FILL_MAX` characters."""

FILL_MAX: Final = 200
"""The longest value a :data:`FILL` matches (a file name, a short argument)."""

REST: Final = "{REST}"
"""Where the tool puts a program's output: matches any text (none included)."""

ARGS: Final = "{ARGS}"
"""Where a command puts the person's arguments: matches any text, returned by
:meth:`FixedPrompts.find` (at most one per prompt)."""


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


class PromptMatch(msgspec.Struct, frozen=True, kw_only=True):
    """A text found to be a fixed prompt.

    Attributes:
        prompt: the table entry.
        args: the person's arguments the prompt carries (normalized; ``""``
            when it has no :data:`ARGS` place or they were empty).
    """

    prompt: FixedPrompt
    args: str = ""


class FixedPrompts:
    """A compiled table of fixed prompts.

    Args:
        prompts: the table (any order).

    Raises:
        ValueError: a prompt whose normalized text is empty, or with more than one
            :data:`ARGS` place.
    """

    def __init__(self, prompts: Iterable[FixedPrompt]) -> None:
        self._prompts: tuple[FixedPrompt, ...] = tuple(prompts)
        self._exact: dict[str, FixedPrompt] = {}
        self._patterns: list[tuple[re.Pattern[str], FixedPrompt]] = []
        for prompt in self._prompts:
            normalized = normalize_text(prompt.text)
            if not normalized:
                raise ValueError(f"empty fixed prompt ({prompt.origin})")
            if normalized.count(ARGS) > 1:
                raise ValueError(f"more than one {ARGS} place ({prompt.origin})")
            if FILL not in normalized and REST not in normalized and ARGS not in normalized:
                self._exact[normalized] = prompt
                continue
            # A REST or ARGS place takes the spaces around it too (it may be empty).
            for wide in (REST, ARGS):
                normalized = normalized.replace(f" {wide}", wide).replace(f"{wide} ", wide)
            pattern = "(?P<args>.*?)".join(
                ".*?".join(f".{{1,{FILL_MAX}}}?".join(re.escape(p) for p in part.split(FILL))
                           for part in piece.split(REST))
                for piece in normalized.split(ARGS))
            self._patterns.append((re.compile(pattern, re.DOTALL), prompt))

    @property
    def prompts(self) -> tuple[FixedPrompt, ...]:
        """The table, in the order given."""
        return self._prompts

    def match(self, text: str | None) -> FixedPrompt | None:
        """The fixed prompt ``text`` is, or ``None`` (:meth:`find` without the arguments).

        Pure; thread-safe; non-blocking.
        """
        found = self.find(text)
        return found.prompt if found is not None else None

    def find(self, text: str | None) -> PromptMatch | None:
        """Whether ``text`` is one of the fixed prompts, and the person's arguments in it.

        Args:
            text: a turn's text (normalized or not).

        Returns:
            The table entry whose normalized text equals ``text``'s (its
            :data:`FILL` places matching any 1 to :data:`FILL_MAX` characters,
            its :data:`REST` and :data:`ARGS` places any text) with the text at
            its :data:`ARGS` place, or ``None``. Pure; thread-safe; non-blocking.
        """
        normalized = normalize_text(text)
        if not normalized:
            return None
        exact = self._exact.get(normalized)
        if exact is not None:
            return PromptMatch(prompt=exact)
        for pattern, prompt in self._patterns:
            found = pattern.fullmatch(normalized)
            if found is not None:
                args = found.groupdict().get("args") or ""
                return PromptMatch(prompt=prompt, args=args.strip())
        return None
