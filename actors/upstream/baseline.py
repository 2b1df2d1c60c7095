"""Baselines for new upstream links, by source name through the registry.

``adopt`` calls a source's :attr:`~actors.upstream.reading.Reading.baseline`
in the caller's thread; it blocks only on bounded reads of the source and
never raises for a bad source. :class:`Baseline` itself is
:mod:`actors.upstream.reading`'s, the line-based baseline
:func:`actors.upstream.jsonl.read_baseline` (both re-exported here).
"""

from __future__ import annotations

from actors.upstream.jsonl import HEAD_LIMIT, reduced_first_line
from actors.upstream.reading import Baseline, source_key_of
from actors.upstream.sources import find_source, source_named

__all__ = ["HEAD_LIMIT", "Baseline", "first_line_pending", "jsonl_baseline",
           "reduced_first_line", "source_key_of"]

def first_line_pending(source: str, path: str) -> bool:
    """Whether ``path`` is a transcript of ``source`` whose header line is not complete yet.

    Such a file is not adopted yet (its header decides whether it may be
    monitored); adopt it again once it is written. ``False`` for a source
    without a header line, or not registered. Caller's thread; never raises.
    """
    found = find_source(source)
    return found is not None and found.reading().waiting(path)


def jsonl_baseline(
    source: str, path: str, *, thread_id: str | None, from_start: bool
) -> Baseline | None:
    """Baseline a transcript of the line-based ``source``; ``None`` when it cannot be read.

    The registered source's own baseline (see
    :func:`actors.upstream.jsonl.read_baseline`); a source whose header line
    is not complete yet is ``None`` too (see :func:`first_line_pending`).

    Raises:
        KeyError: no source is registered under ``source``.
    """
    found = source_named(source).reading().baseline(path, thread_id, from_start, 1000)
    return found if isinstance(found, Baseline) else None
