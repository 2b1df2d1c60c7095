"""Codex as an upstream source: rollout JSONL files (upstream-formats.md §3).

The light half (locations, discovery) is here; the line classifier and the
``session_meta`` header's verdict are :mod:`actors.upstream.codex.classify`, its
sample writer :mod:`actors.upstream.codex.kit`.

Its heavy half is :data:`actors.upstream.codex.reading.READING`.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator, Mapping

from actors.upstream.source import Candidate, Source, glob_sessions, named_by

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from actors.upstream.reading import Reading

__all__ = ["CODEX"]

NAME = "codex"
_UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I)


def locations(env: Mapping[str, str], home: str) -> list[str]:
    """``$CODEX_HOME/sessions``, else ``~/.codex/sessions`` (pure)."""
    root = (os.path.expanduser(env["CODEX_HOME"]) if env.get("CODEX_HOME")
            else os.path.join(home, ".codex"))
    return [os.path.join(root, "sessions")]


def _thread_of(stem: str) -> str:
    match = _UUID_TAIL.search(stem)
    return match.group(1) if match else stem


def discover(root: str) -> Iterator[Candidate]:
    """``<root>/**/rollout-*.jsonl``; the thread id is the UUID ending the name."""
    return glob_sessions(NAME, root, "**/rollout-*.jsonl", _thread_of)


@functools.cache
def reading() -> Reading:
    """Codex's heavy half (loaded once, on first use; any thread)."""
    from actors.upstream.codex.reading import READING  # noqa: PLC0415 - ssa hook's cold path (bench_hook) loads only the light half

    return READING


CODEX = Source(name=NAME, title="Codex", flag=NAME, metavar="DIR", holds="file",
               locations=locations, discover=discover,
               no_link="Codex thread not started by a user", reading=reading,
               session_name=named_by("actors.upstream.codex.title"))
"""Codex: the ``session_meta`` line decides the thread id and whether it may be linked."""
