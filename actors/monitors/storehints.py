"""A store source's batched change query, as the monitors' hints (pure but the query)."""

from __future__ import annotations

import logging

from actors.upstream.scan import StoreHint
from actors.upstream.source import Source
from persistence import UpstreamLink

__all__ = ["hint_of", "store_hint", "store_sequences"]

logger = logging.getLogger("actors.monitors.link_monitor")


def store_sequences(source: Source, path: str, thread_ids: list[str],
                    busy_timeout_ms: int) -> dict[str, int] | None:
    """The current change sequence of each of these sessions in the store at ``path``.

    ``None`` when ``source`` has no batched change query (a file source).
    Caller's thread; blocks on the source's one query.

    Raises:
        Exception: the store cannot be opened or queried; that proves
            nothing about the sessions.
    """
    poll = source.reading().poll
    return None if poll is None else poll(path, thread_ids, busy_timeout_ms)


def hint_of(sequences: dict[str, int] | None, thread_id: str) -> StoreHint:
    """A session's hint from :func:`store_sequences` (``None``: the query failed). Pure."""
    if sequences is None:
        return StoreHint(state="failed")
    if thread_id in sequences:
        return StoreHint(state="ok", seq=sequences[thread_id])
    return StoreHint(state="gone")


def store_hint(source: Source, link: UpstreamLink, busy_timeout_ms: int) -> StoreHint:
    """The change hint of one store link, queried on its own (never raises)."""
    path = link.upstream_ref.get("path")
    if not isinstance(path, str):
        return StoreHint(state="failed")
    try:
        sequences = store_sequences(source, path, [link.thread_id], busy_timeout_ms)
    except Exception as exc:  # apsw errors, undecodable rows: proves nothing
        logger.debug("%s sequence query on %s failed: %s", source.title, path, exc)
        sequences = None
    return hint_of(sequences, link.thread_id)
