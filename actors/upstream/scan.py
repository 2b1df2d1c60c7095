"""One scan of one upstream source (anchor §3.17): the mechanics and the registry's classifiers.

The mechanics live in :mod:`actors.upstream.scanning` (re-exported here);
:func:`line_classifier` finds a registered line-based source's classifier.
These functions run in an upstream monitor actor's thread and block only on
bounded reads; the scans never raise (every failure becomes a result kind).
"""

from __future__ import annotations

from actors.upstream.scanning import (
    LONG_LINE_MAX_BYTES,
    LineClassifier,
    PendingLine,
    ScanResult,
    StoreHint,
    classify_long_line,
    count_turns,
    scan_jsonl,
)
from actors.upstream.sources import source_named

__all__ = [
    "LONG_LINE_MAX_BYTES",
    "LineClassifier",
    "PendingLine",
    "ScanResult",
    "StoreHint",
    "classify_long_line",
    "count_turns",
    "line_classifier",
    "scan_jsonl",
]


def line_classifier(source: str, path: str | None = None) -> LineClassifier:
    """Return the line classifier of the registered line-based ``source``.

    With ``path`` (the transcript the lines come from) a source may give a
    classifier that also reads beside it (Claude Code's recognises typed rows
    copied from an earlier session's transcript). Caller's thread; the
    first call for a source loads its reading.

    Raises:
        KeyError: ``source`` is not registered, or not line based (a store).
    """
    lines = source_named(source).reading().lines
    if lines is None:
        raise KeyError(source)
    return lines(path)
