"""Read ``ssa list``'s aligned table back into cells, for tests."""

from __future__ import annotations

from actors.cli.listing import COLUMNS


def table_rows(text: str) -> list[dict[str, str]]:
    """The rows of an ``ssa list`` table as ``{column title: cell}`` (pure).

    Each column starts where its title starts in the header line (the table
    pads every column to its widest cell, titles included).
    """
    header, *lines = text.splitlines()
    titles = [t for t in ("SESSION", "AGENT", *COLUMNS[1:]) if t in header]
    starts = [header.index(t) for t in titles]
    assert starts == sorted(starts), header
    rows = []
    for line in lines:
        ends = [*starts[1:], len(line)]
        rows.append({t: line[a:b].strip() for t, a, b in zip(titles, starts, ends, strict=True)})
    return rows
