"""Pi as an upstream source: session JSONL files, formats v1-v3 (upstream-formats.md §5).

The light half (locations, discovery) is here; the line classifier and the
header's verdict are :mod:`actors.upstream.pi.classify`, its sample writer
:mod:`actors.upstream.pi.kit`.

Its heavy half is :data:`actors.upstream.pi.reading.READING`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping

from actors.upstream.source import Candidate, Source, glob_sessions, named_by

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from actors.upstream.reading import Reading

__all__ = ["PI"]

NAME = "pi"


def locations(env: Mapping[str, str], home: str) -> list[str]:
    """``$PI_CODING_AGENT_DIR/sessions``, else ``~/.pi/agent/sessions`` (pure)."""
    root = (os.path.expanduser(env["PI_CODING_AGENT_DIR"]) if env.get("PI_CODING_AGENT_DIR")
            else os.path.join(home, ".pi", "agent"))
    return [os.path.join(root, "sessions")]


def discover(root: str) -> Iterator[Candidate]:
    """``<root>/<dir>/<timestamp>_<id>.jsonl``; the id follows the last ``_``."""
    return glob_sessions(NAME, root, "*/*.jsonl", lambda stem: stem.rsplit("_", 1)[-1])


@functools.cache
def reading() -> Reading:
    """Pi's heavy half (loaded once, on first use; any thread)."""
    from actors.upstream.pi.reading import READING  # noqa: PLC0415 - ssa hook's cold path (bench_hook) loads only the light half

    return READING


PI = Source(name=NAME, title="Pi", flag=NAME, metavar="DIR", holds="file",
            locations=locations, discover=discover, no_link="not a Pi session file",
            reading=reading,
            session_name=named_by("actors.upstream.pi.title"))
"""Pi: a file whose first line is a session header (any version) may be linked."""
