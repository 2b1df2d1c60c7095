"""Finding adoptable sessions in each source's standard locations (upstream-formats.md §2-§5).

Used by ``ssa watch`` and ``ssa hook``. Discovery only lists candidates;
adoption decides whether each can be linked. Each source's own locations and
listing are its :class:`~actors.upstream.source.Source` fields (the registry:
:mod:`actors.upstream.sources`). Runs in the caller's thread and blocks on
directory listings (and one query per store).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

from actors.upstream.source import Candidate, unreadable_store
from actors.upstream.sources import all_sources, find_source

__all__ = ["Candidate", "default_catalogs", "discover", "unreadable_store"]


def default_catalogs(env: Mapping[str, str] | None = None,
                     home: str | os.PathLike[str] | None = None) -> dict[str, list[str]]:
    """Each registered source's standard locations, honouring its environment overrides.

    Returns ``{source name: [roots]}`` in registry order, whether or not they
    exist (see each source's ``locations``, e.g. Claude Code's
    ``$CLAUDE_CONFIG_DIR``); each root a path string (``ssa hook`` loads no
    :mod:`pathlib`). Pure apart from reading ``os.environ`` and the home
    directory when not given.
    """
    env = os.environ if env is None else env
    base = os.path.expanduser("~") if home is None else os.fspath(home)
    return {source.name: source.locations(env, base) for source in all_sources()}


def discover(source: str, root: str | os.PathLike[str]) -> Iterator[Candidate]:
    """List the sessions of ``source`` under ``root`` (a directory, or a store's database).

    Unreadable directories are skipped; an unreadable store is logged once
    per reason (:func:`unreadable_store` tells why); a missing root or an
    unregistered source yields nothing. Never raises.
    """
    found = find_source(source)
    if found is not None:
        yield from found.discover(os.fspath(root))
