"""Aider as an upstream source: a repository's ``.aider.chat.history.md`` (docs/upstream-aider.md).

Aider appends every session of a repository to one Markdown file in the
repository, so there is no standard home location: ``ssa watch --aider DIR``
names a repository or a folder of repositories. One history file is one
upstream session (its sessions are read one after another); its id is the
repository's name and a digest of its path, so two repositories of one name
never share a session key.

The light half (discovery, the hook's head) is here; the blocks' decisions
are :mod:`actors.upstream.aider.classify`, its sample writer :mod:`actors.upstream.aider.kit`.
Its heavy half is :data:`actors.upstream.aider.reading.READING`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping

from actors.upstream.aider.paths import HISTORY_FILE, history_thread_id
from actors.upstream.source import Candidate, Source, in_subfolders, named_by

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from actors.upstream.reading import Reading

__all__ = ["AIDER"]

NAME = "aider"


def locations(env: Mapping[str, str], home: str) -> list[str]:
    """None: history files live in repositories (pass ``--aider DIR``). Pure."""
    return []


def discover(root: str) -> Iterator[Candidate]:
    """``<root>/.aider.chat.history.md`` and ``<root>/*/.aider.chat.history.md`` (a
    repository or a folder of repositories); sorted; never raises."""
    if not os.path.isdir(root):
        return
    for path in [os.path.join(root, HISTORY_FILE), *in_subfolders(root, HISTORY_FILE)]:
        if os.path.isfile(path):
            yield Candidate(source=NAME, path=path, thread_id=history_thread_id(path))


def head(path: str) -> tuple[str | None, int | None]:
    """``(the repository directory, None)`` for the hook (pure)."""
    return os.path.dirname(os.path.realpath(path)), None


@functools.cache
def reading() -> Reading:
    """Aider's heavy half (loaded once, on first use; any thread)."""
    from actors.upstream.aider.reading import READING  # noqa: PLC0415 - ssa hook's cold path (bench_hook) loads only the light half

    return READING


AIDER = Source(name=NAME, title="Aider", flag=NAME, metavar="DIR", holds="file",
               locations=locations, discover=discover,
               no_link="not an Aider chat history", reading=reading, head=head,
               session_name=named_by("actors.upstream.aider.title"))
"""Aider: every history file may be linked; program-driven sessions in it never count."""
