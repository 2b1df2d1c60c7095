"""Readers and classifiers for adopted upstream sessions (Claude Code, Codex, OpenCode, Pi).

One module per source. Each classifies units of that tool's real on-disk
format conservatively: only turns a person typed count as human.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from actors.upstream.common import Unit, normalize_text, text_hash

__all__ = ["Unit", "normalize_text", "text_hash"]


def __getattr__(name: str) -> Any:
    """Import a public name from :mod:`actors.upstream.common` on first use (PEP 562).

    Importing one reader (``actors.upstream.catalog``) then loads no other.

    Raises:
        AttributeError: ``name`` is not a public name of this package.
    """
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from actors.upstream import common as _common  # noqa: PLC0415 - deferred for start-up cost

    return getattr(_common, name)
