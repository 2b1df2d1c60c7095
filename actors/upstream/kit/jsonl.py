"""What every JSONL transcript builder shares: the file, the clock, whole-line appends."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from actors.upstream.kit.clock import ManualClock

__all__ = ["JsonlFile", "encode", "encode_json", "iso"]

ROW_STEP_MS = 1000
"""How far a builder's own clock moves per row when no clock is given."""


def iso(ms: int) -> str:
    """Epoch ms as the ISO 8601 UTC text the tools write (``2026-01-01T00:00:00.000Z``)."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class JsonlFile:
    """An append-only JSONL file and the clock that stamps its rows.

    Args:
        path: the file (created on the first write; its parent must exist).
        clock: epoch-ms clock; default a private :class:`ManualClock` that
            moves :data:`ROW_STEP_MS` per row, so rows keep their order.

    Not thread-safe; blocks on file writes.
    """

    def __init__(self, path: str | os.PathLike[str], clock: Callable[[], int] | None) -> None:
        self.path = Path(path)
        self.parent: str | None = None
        """The id of the last row built, for formats whose rows name their parent row."""
        self._clock = clock
        self._own = ManualClock() if clock is None else None

    def now(self) -> int:
        """The time for the next row, epoch ms."""
        if self._own is not None:
            return self._own.advance(ROW_STEP_MS)
        assert self._clock is not None
        return self._clock()

    def catch_up(self, ms: int) -> None:
        """Move a private clock on to at least ``ms`` (epoch ms), e.g. past rows copied
        from another file; a clock the caller gave is the caller's to move."""
        if self._own is not None and self._own() < ms:
            self._own.advance(ms - self._own())

    def is_empty(self) -> bool:
        """Whether nothing was written yet (a missing file counts as empty)."""
        try:
            return self.path.stat().st_size == 0
        except FileNotFoundError:
            return True

    def append_turns(self, turns: Iterable[object],
                     rows_of: Callable[[Any], list[dict[str, Any]]],
                     header: Callable[[], dict[str, Any]] | None = None) -> int:
        """Write ``header()`` if the file is empty, then ``rows_of(turn)`` for each turn.

        Returns how many lines were written, all in one write.

        Raises:
            TypeError: ``rows_of`` refused a turn (nothing is written then, and
                :attr:`parent` is as it was).
            OSError: the file cannot be written.
        """
        parent = self.parent
        try:
            rows = [header()] if header is not None and self.is_empty() else []
            for turn in turns:
                rows += rows_of(turn)
            return self.write(rows)
        except BaseException:  # nothing was written: neither is the chain moved on
            self.parent = parent
            raise

    def lines(self, turns: Iterable[object],
              rows_of: Callable[[Any], list[dict[str, Any]]]) -> bytes:
        """The lines of ``turns`` as bytes, without writing (the chain moves on).

        Raises:
            TypeError: ``rows_of`` refused a turn.
        """
        return encode(row for turn in turns for row in rows_of(turn))

    def write(self, rows: list[dict[str, Any]]) -> int:
        """Append ``rows`` as whole lines in one write; return how many.

        Raises:
            OSError: the file cannot be written.
        """
        data = encode(rows)
        with self.path.open("ab") as handle:
            handle.write(data)
        return len(rows)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def encode(rows: Iterable[dict[str, Any]]) -> bytes:
    """``rows`` as JSONL bytes: one compact UTF-8 line each, as the tools' serializers write.

    A lone surrogate in a text is written as a ``\\uXXXX`` escape, as
    ``JSON.stringify`` writes it (it has no UTF-8 form).
    """
    return b"".join(encode_json(row).encode() + b"\n" for row in rows)


def encode_json(value: object) -> str:
    """``value`` as compact JSON text, non-ASCII kept, lone surrogates escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
