"""``ssa classify``: the monitor's own decisions over a whole transcript.

:func:`classify_units` hands the transcript to its source's
:attr:`~actors.upstream.reading.Reading.classify`
(:func:`actors.upstream.jsonl.classify_lines` is the walk every line-based
source shares).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from actors.errors import InvalidArgument
from actors.upstream.reading import readable
from actors.upstream.sources import all_sources, find_source

__all__ = ["classify_units"]


def classify_units(source: str, path: str, *, session: str | None = None,
                   scan_cap_bytes: int = 1 << 20) -> Iterator[dict[str, Any]]:
    """Yield the monitor's decision for each unit of a transcript.

    Line-based sources yield ``{"line": n, "human": ..., "reason": ...}`` per
    non-blank line (see :func:`classify_lines`); a store source yields
    ``{"message": id, "session": id, "human": ..., "reason": ...}`` per
    message of ``session`` (OpenCode's ``path`` may also be a JSON-era
    ``storage`` directory). Runs in the caller's thread; reads lazily.

    Raises:
        InvalidArgument: a store source without ``session`` (the message lists
            the store's session ids), ``session`` for a file source (its
            transcripts hold one session each), or an unknown source.
        SessionStateError: the file cannot be read (the message says why in
            a user's terms).
    """
    found = find_source(source)
    if session is not None and (found is None or found.holds != "store"):
        stores = " or ".join(f"--source {s.name}" for s in all_sources() if s.holds == "store")
        raise InvalidArgument(f"--session is only for {stores} (a {source} "
                              "transcript holds one session: give its file)")
    if found is None:
        readable(path)
        raise InvalidArgument(f"unknown source {source!r}")
    yield from found.reading().classify(path, session, scan_cap_bytes)
