"""``session_status(..., typed_text=N)``: the typed text of listed events, read on request.

The signal log holds no text; each upstream ``human_direct_message`` event
points into its transcript (:mod:`actors.upstream.typedtext`). This module
reads the listed events' texts back from there at call time. Nothing read is
stored, cached or logged.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

from actors.upstream.sources import find_source
from actors.upstream.typedtext import UnitsIn, read_typed
from persistence import SessionStateEvent, TypedRead, keyed_hash, read_secret

__all__ = ["typed_of", "typed_texts"]


def _units_in(tool: str, path: str) -> UnitsIn | None:
    source = find_source(tool)
    return source.reading().units_in if source is not None else None


def typed_texts(conn: Any, events: Iterable[SessionStateEvent],
                limit: int) -> tuple[TypedRead, ...]:
    """One :class:`~persistence.TypedRead` per ``human_direct_message`` in ``events``.

    Args:
        conn: a read connection of the signal log (for the database's keying
            of text digests; one statement).
        events: the events ``session_status`` lists, in order.
        limit: most characters per text.

    Returns:
        The reads in the events' order. Never raises for a transcript that
        is gone or changed (see :data:`~persistence.records.TypedStatus`);
        blocks on bounded reads of each transcript (caller's thread).
    """
    return typed_of(conn, [(e.sequence, e.payload) for e in events
                           if e.kind == "human_direct_message"], limit)


def typed_of(conn: Any, events: list[tuple[int, Any]], limit: int) -> tuple[TypedRead, ...]:
    """:func:`typed_texts` for ``(sequence, payload)`` pairs of ``human_direct_message``
    events (the hook's summary lines). Same blocking and errors."""
    if not events:
        return ()
    key = partial(keyed_hash, read_secret(conn))
    return tuple(read_typed(sequence, payload, key=key, units_in=_units_in, limit=limit)
                 for sequence, payload in events)
