"""A session's name for people, read from the tool's own files at display time.

Each source's ``title`` module (``actors/upstream/<source>/title.py``) finds
the tool's own title (Claude Code's ``/rename``, a Codex thread name, an
OpenCode title, ...) or else the first words of the first typed turn. This
module holds what they share: cleaning a title to one short line, the first
words of a text, and a bounded read of a JSONL file's rows that may hold a
title (its head and its tail, never the whole of a large file).

Names are never stored: they are what a person typed, so they are read
when shown and forgotten (the seed's rule that the log holds no text).

Every function runs in its caller's thread; the readers block on at most
:data:`HEAD` + :data:`TAIL` bytes of one file and never raise.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from actors.upstream.common import Unit
from actors.upstream.files import open_regular_file

__all__ = ["HEAD", "NAME_CHARS", "NAME_WORDS", "TAIL", "TITLE_CHARS", "clean_title",
           "first_typed", "first_words", "row_lines", "rows_with"]

NAME_WORDS = 8
"""Most words a name made from the first typed turn keeps."""
NAME_CHARS = 60
"""Most characters a name made from the first typed turn keeps."""
TITLE_CHARS = 80
"""Most characters of a tool's own title shown (longer ones end in ``…``)."""
HEAD = 64 * 1024
"""Bytes of a file's start read for a title or the first typed turn (Claude Code's
own session list reads as much of each end)."""
TAIL = 256 * 1024
"""Bytes of a file's end read for the latest title (tools append renames; Claude Code
writes its title again near the end)."""

_decoder = msgspec.json.Decoder()


def _one_line(text: str) -> str:
    """``text`` without control or format characters, whitespace runs as one space."""
    kept = "".join(" " if ch.isspace() else ch for ch in text
                   if ch.isspace() or unicodedata.category(ch)[0] != "C")
    return " ".join(kept.split())


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def clean_title(text: object, limit: int = TITLE_CHARS) -> str | None:
    """A tool's title as one line of at most ``limit`` characters, or ``None`` (pure).

    Args:
        text: the title as the tool stored it (anything not a string: ``None``).
        limit: most characters kept; a longer title is cut and ends in ``…``.

    Returns:
        The title with control characters removed and whitespace runs as one
        space; ``None`` when nothing is left.
    """
    if not isinstance(text, str):
        return None
    line = _one_line(text)
    return _cut(line, limit) if line else None


def first_words(text: object) -> str | None:
    """The first :data:`NAME_WORDS` words of ``text``, at most :data:`NAME_CHARS` (pure).

    One line, control characters removed; ``…`` marks a cut. ``None`` for an
    empty text or a non-string.
    """
    if not isinstance(text, str):
        return None
    words = _one_line(text).split()
    if not words:
        return None
    line = " ".join(words[:NAME_WORDS])
    if len(words) > NAME_WORDS:
        line += "…"
    return _cut(line, NAME_CHARS)


def _span(path: str, head: int, tail: int) -> tuple[bytes, bytes]:
    """``(head bytes, tail bytes)`` of ``path``; the tail is empty when the head holds
    the whole file, and starts at a line boundary otherwise.

    Raises:
        OSError: the file cannot be read.
    """
    with open_regular_file(path) as file:
        size = os.fstat(file.fileno()).st_size
        if size <= head + tail:
            return file.read(head + tail), b""
        first = file.read(head)
        file.seek(size - tail)
        last = file.read(tail)
    newline = last.find(b"\n")
    return first, (last[newline + 1:] if newline >= 0 else b"")


def _chunks(path: str, head: int, tail: int) -> list[bytes]:
    """The parts of ``path`` :func:`row_lines` reads, each cut to whole lines ([] on failure)."""
    try:
        first, last = _span(path, head, tail)
    except (OSError, ValueError):
        return []
    if last or len(first) == head + tail:  # the head's last line is cut by the skip
        first = first[:first.rfind(b"\n") + 1]
    return [chunk for chunk in (first, last) if chunk]


def _lines_of(chunk: bytes) -> Iterator[bytes]:
    start = 0
    while start < len(chunk):
        end = chunk.find(b"\n", start)
        end = len(chunk) if end < 0 else end
        line = chunk[start:end].rstrip(b"\r")
        if line:
            yield line
        start = end + 1


def row_lines(path: str, *, head: int = HEAD, tail: int = TAIL) -> Iterator[bytes]:
    """The complete lines of ``path``'s first ``head`` and last ``tail`` bytes, in order.

    A small file is read whole; a large one's middle is skipped (a partial
    line at either cut is left out). Nothing on a read failure. Caller's
    thread; blocks on at most ``head + tail`` bytes; never raises.
    """
    for chunk in _chunks(path, head, tail):
        yield from _lines_of(chunk)


def rows_with(path: str, needles: tuple[bytes, ...], *, head: int = HEAD,
              tail: int = TAIL) -> Iterator[dict[str, Any]]:
    """The JSON objects among :func:`row_lines` that contain one of ``needles``, in order.

    The needles are searched in the bytes read (no line is split or decoded
    unless it holds one), so a long transcript costs one bounded read and a
    scan. Lines that are not JSON objects are skipped. Caller's thread; never
    raises.
    """
    for chunk in _chunks(path, head, tail):
        spans: set[tuple[int, int]] = set()
        for needle in needles:
            at = chunk.find(needle)
            while at >= 0:
                start = chunk.rfind(b"\n", 0, at) + 1
                end = chunk.find(b"\n", at)
                end = len(chunk) if end < 0 else end
                spans.add((start, end))
                at = chunk.find(needle, end)
        for start, end in sorted(spans):
            try:
                row = _decoder.decode(chunk[start:end])
            except (msgspec.DecodeError, ValueError):
                continue
            if isinstance(row, dict):
                yield row


def first_typed(path: str, classify: Callable[[bytes], Unit], *,
                head: int = HEAD) -> str | None:
    """The first words (:func:`first_words`) of the first turn a person typed in
    ``path``'s first ``head`` bytes, classified line by line with ``classify``.

    Sources pass their plain line classifier (``Reading.lines(None)``): the
    copy checks ``Reading.lines(path)`` adds list and read the other
    transcripts of the folder, far too much for a name (a 2,000-session
    listing took six minutes that way); a continued session is then named by
    the first turn it carries. ``None`` when none is there or the file cannot
    be read. Caller's thread; never raises (a classifier that raises ends the
    search).
    """
    for line in row_lines(path, head=head, tail=0):
        try:
            unit = classify(line)
        except Exception:  # a classifier's defect must not break a listing
            return None
        if unit.stop:
            return None
        if unit.human and unit.text:
            return first_words(unit.text)
    return None
