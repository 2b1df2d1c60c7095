"""Readers and classifiers for adopted upstream sessions: pure (no actors, no database).

Each source is one package, ``actors.upstream.<source>``, holding its
:class:`~actors.upstream.source.Source` (``<source>.source``: the light half;
``<source>.reading``: the heavy half, loaded on first use), its readers,
decisions and copies, and its test-kit builder (``<source>.kit``); it is
listed once in the registry :mod:`actors.upstream.sources`. Every classifier
decides units of its tool's real on-disk format conservatively: only turns
a person typed count as human. The generic modules (``catalog``, ``scan``,
``baseline``, ``classify``) name no source; ``kit`` holds what every
source's test-kit builder shares. May import the standard library, msgspec,
APSW, ``actors.errors`` and ``persistence``'s pure parts only (see
pyproject.toml's import contracts); see docs/sources.md.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import Any

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
