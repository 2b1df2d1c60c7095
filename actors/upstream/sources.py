"""The registry of upstream sources: the one place that lists them.

Adding a source is one new package, ``actors/upstream/<source>/``, whose
``source`` module defines its :class:`~actors.upstream.source.Source` (plus
its tests), and one line in :data:`BUILT_IN`. Everything else (``ssa watch``'s options, discovery,
adoption, scans, ``ssa classify``, the hook, the samples) reads this list.

Light (the sources' light halves only): ``ssa hook`` imports it at every
prompt. Lookups are non-blocking and safe from any thread.
"""

from __future__ import annotations

from _thread import allocate_lock
from collections.abc import Iterator
from contextlib import contextmanager

from actors.upstream.aider.source import AIDER
from actors.upstream.claude.source import CLAUDE
from actors.upstream.codex.source import CODEX
from actors.upstream.crush.source import CRUSH
from actors.upstream.gemini.source import GEMINI
from actors.upstream.opencode.source import OPENCODE
from actors.upstream.pi.source import PI
from actors.upstream.qwen.source import QWEN
from actors.upstream.source import Source

__all__ = ["BUILT_IN", "all_sources", "find_source", "registered", "source_named",
           "source_names"]

BUILT_IN: tuple[Source, ...] = (CLAUDE, CODEX, OPENCODE, PI, GEMINI, QWEN, AIDER, CRUSH)
"""The sources this release reads, in the order options and reports list them."""

_lock = allocate_lock()
_extra: list[Source] = []
"""Sources registered at run time (:func:`registered`), after the built-in ones."""
_by_name: dict[str, Source] = {source.name: source for source in BUILT_IN}
"""Every registered source by name: a scan cycle looks one up per link."""


def all_sources() -> tuple[Source, ...]:
    """Every registered source, in order (any thread; non-blocking)."""
    return (*BUILT_IN, *_extra) if _extra else BUILT_IN


def source_names() -> tuple[str, ...]:
    """The registered sources' names (the ``source`` values links may carry)."""
    return tuple(s.name for s in all_sources())


def find_source(name: str) -> Source | None:
    """The source named ``name``, or ``None`` when none is registered under it."""
    return _by_name.get(name)


def source_named(name: str) -> Source:
    """The source named ``name``.

    Raises:
        KeyError: no source is registered under ``name``.
    """
    found = find_source(name)
    if found is None:
        raise KeyError(name)
    return found


@contextmanager
def registered(source: Source) -> Iterator[Source]:
    """Register ``source`` (after the built-in ones) while the block runs.

    For tests and embedders trying a source before it is listed in
    :data:`BUILT_IN`; the command line reads the registry when it builds its
    parser, so register first. Any thread.

    Raises:
        ValueError: a source of that name or flag is already registered.
    """
    with _lock:
        if any(s.name == source.name or s.flag == source.flag for s in all_sources()):
            raise ValueError(f"a source named {source.name!r} is already registered")
        _extra.append(source)
        _by_name[source.name] = source
    try:
        yield source
    finally:
        with _lock:
            _extra.remove(source)
            del _by_name[source.name]
