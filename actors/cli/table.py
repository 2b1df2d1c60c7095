"""An aligned text table for people: column widths from the content, long cells cut.

Pure: no I/O; any thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["GAP", "cut", "render_table"]

GAP = "  "
"""What separates two columns (two spaces: a cell never holds two in a row)."""


def cut(cell: str, width: int, *, keep_end: bool = False) -> str:
    """``cell`` in at most ``width`` characters; a cut is marked ``…`` (pure).

    Args:
        cell: the text (one line).
        width: the most characters kept (at least 1).
        keep_end: keep the end instead of the start (a path's last folders).
    """
    if len(cell) <= width:
        return cell
    if keep_end:
        return "…" + cell[len(cell) - width + 1:]
    return cell[:width - 1] + "…"


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]], *,
                 limits: Mapping[int, int] | None = None,
                 keep_end: frozenset[int] = frozenset()) -> str:
    """The table as text: the header line, then one line per row, each ending ``\\n``.

    Args:
        header: the column titles.
        rows: the cells of each row, as many as ``header`` (one line each).
        limits: the most characters of a column, by its index (unlimited when absent);
            a longer cell is cut (:func:`cut`).
        keep_end: the columns whose cut cells keep their end (paths).

    Each column is as wide as its widest cell or title; the last column is not
    padded (no trailing spaces). Pure.
    """
    limits = limits or {}
    cells = [[cut(c, limits[i], keep_end=i in keep_end) if i in limits else c
              for i, c in enumerate(row)] for row in rows]
    widths = [max([len(title), *(len(row[i]) for row in cells)])
              for i, title in enumerate(header)]
    last = len(header) - 1

    def line(row: Sequence[str]) -> str:
        return GAP.join(c if i == last else c.ljust(widths[i])
                        for i, c in enumerate(row)).rstrip() + "\n"

    return line(header) + "".join(line(row) for row in cells)
