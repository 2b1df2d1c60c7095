"""Qwen Code as an upstream source: session JSONL files (docs/upstream-qwen.md).

The light half (locations, discovery, the change files) is here; the
records' decisions are :mod:`actors.upstream.qwen.classify`, its sample writer
:mod:`actors.upstream.qwen.kit`. The hook's head is the default one: every
record carries ``cwd`` and ``timestamp``.

Its heavy half is :data:`actors.upstream.qwen.reading.READING`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping

from actors.upstream.source import Candidate, Source, glob_sessions, named_by

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from actors.upstream.reading import Reading

__all__ = ["QWEN"]

NAME = "qwen"


def locations(env: Mapping[str, str], home: str) -> list[str]:
    """``$QWEN_RUNTIME_DIR/projects``, else ``$QWEN_HOME/projects``, else
    ``~/.qwen/projects`` (pure).

    Qwen Code 0.24.4 keeps session data under its runtime base directory:
    ``QWEN_RUNTIME_DIR`` first, then the global dir (``QWEN_HOME`` or
    ``~/.qwen``) (``Storage.getRuntimeBaseDir``, ``Storage.getGlobalQwenDir``).
    """
    for variable in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
        if env.get(variable):
            return [os.path.join(os.path.expanduser(env[variable]), "projects")]
    return [os.path.join(home, ".qwen", "projects")]


def discover(root: str) -> Iterator[Candidate]:
    """``<root>/<cwd slug>/chats/<session id>.jsonl``; a ``chats`` directory itself may be
    given. Sub-agents' files (``<slug>/subagents/...``) are not sessions of their own."""
    chats = os.path.basename(os.path.normpath(root)) == "chats"
    pattern = "*.jsonl" if chats else "*/chats/*.jsonl"
    return glob_sessions(NAME, root, pattern, str)


def runtime_file(path: str) -> str:
    """``<chats>/<session id>.runtime.json`` beside a session file (pure)."""
    base = os.path.basename(path)
    stem = base[:-len(".jsonl")] if base.endswith(".jsonl") else base
    return os.path.join(os.path.dirname(path), f"{stem}.runtime.json")


def watch_files(path: str) -> tuple[str, ...]:
    """The session file and its ``runtime.json`` sidecar (written when the TUI starts)."""
    return (path, runtime_file(path))


@functools.cache
def reading() -> Reading:
    """Qwen Code's heavy half (loaded once, on first use; any thread)."""
    from actors.upstream.qwen.reading import READING  # noqa: PLC0415 - ssa hook's cold path (bench_hook) loads only the light half

    return READING


QWEN = Source(name=NAME, title="Qwen Code", flag=NAME, metavar="DIR", holds="file",
              locations=locations, discover=discover,
              no_link="program-driven, channel-driven or sub-agent Qwen Code session",
              reading=reading, watch_files=watch_files,
              session_name=named_by("actors.upstream.qwen.title"))
"""Qwen Code: only sessions the interactive UI ran (its ``runtime.json`` sidecar) are linked."""
