"""Gemini CLI as an upstream source: session JSONL files and the older session documents
(``*.json``, 0.38 and before; docs/upstream-gemini.md).

The light half (locations, discovery, the change files, the hook's head) is
here; the rows' decisions are :mod:`actors.upstream.gemini.classify`, its sample
writer :mod:`actors.upstream.gemini.kit`.

Its heavy half is :data:`actors.upstream.gemini.reading.READING`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping

from actors.upstream.gemini.paths import logs_file, project_root_of
from actors.upstream.source import Candidate, Source, glob_sessions, json_head, named_by

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from actors.upstream.reading import Reading

__all__ = ["GEMINI"]

NAME = "gemini"


def locations(env: Mapping[str, str], home: str) -> list[str]:
    """``$GEMINI_CLI_HOME/.gemini/tmp``, else ``~/.gemini/tmp`` (pure).

    Gemini CLI 0.61.0 takes ``GEMINI_CLI_HOME`` in place of the home
    directory (``homedir()``, ``packages/core/src/utils/paths.ts``); the
    project temp dirs ``<id>/chats/`` are under ``.gemini/tmp``.
    """
    base = os.path.expanduser(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home
    return [os.path.join(base, ".gemini", "tmp")]


def discover(root: str) -> Iterator[Candidate]:
    """``<root>/<project id>/chats/session-*.jsonl`` (0.39 on) and ``session-*.json``
    (the whole-document files of 0.38 and before); a ``chats`` directory itself may
    be given. The id is the file's name without its suffix. A ``.json`` beside a
    ``.jsonl`` of the same name is left out: Gemini CLI converted it on a resume
    and goes on in the ``.jsonl``. Sub-agent files (``chats/<parent id>/*``) are
    not sessions of their own. Sorted by path; blocks on the listing; never raises.
    """
    prefix = "" if os.path.basename(os.path.normpath(root)) == "chats" else "*/chats/"
    lines = list(glob_sessions(NAME, root, prefix + "session-*.jsonl", str))
    converted = {c.path[:-1] for c in lines}
    documents = [c for c in glob_sessions(NAME, root, prefix + "session-*.json", str)
                 if c.path not in converted]
    return iter(sorted(lines + documents, key=lambda c: c.path.split(os.sep)))


def watch_files(path: str) -> tuple[str, ...]:
    """The session file and its project's ``logs.json`` (a query is logged there first)."""
    return (path, logs_file(path))


def head(path: str) -> tuple[str | None, int | None]:
    """``(project root, started_ms)`` for the hook: ``.project_root`` and the first
    ``timestamp`` (never raises)."""
    _, started = json_head(path)
    return project_root_of(path), started


@functools.cache
def reading() -> Reading:
    """Gemini CLI's heavy half (loaded once, on first use; any thread)."""
    from actors.upstream.gemini.reading import READING  # noqa: PLC0415 - ssa hook's cold path (bench_hook) loads only the light half

    return READING


GEMINI = Source(name=NAME, title="Gemini CLI", flag=NAME, metavar="DIR", holds="file",
                locations=locations, discover=discover,
                no_link="program-driven or sub-agent Gemini CLI session",
                reading=reading, watch_files=watch_files, head=head,
                session_name=named_by("actors.upstream.gemini.title"))
"""Gemini CLI: only interactive sessions (their queries logged in ``logs.json``) are linked."""
