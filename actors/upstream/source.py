"""What one upstream source is: the :class:`Source` every tool's module defines.

A source is one coding agent's on-disk session format (Claude Code's
project JSONL, an OpenCode SQLite store, ...). The generic code (discovery,
adoption, scans, ``ssa classify``, ``ssa watch``, the prompt hook, the
samples) knows no source by name: it asks :mod:`actors.upstream.sources`
(the registry) for these objects and calls their fields.

A :class:`Source` has two halves:

* the light half, its fields: name, flag, standard locations, discovery,
  what a session's change looks like to the hook. Standard library and APSW
  only: ``ssa hook`` loads every source's light half at every prompt
  (its cold path, ``scripts/bench_hook.py``);
* the heavy half, :class:`~actors.upstream.reading.Reading`, returned by
  ``reading()``: baselines, scans, classification, the sample writer. Each
  source module loads it on first use (the one deferred import a source
  has, for that start-up cost).

Pure: nothing here starts a thread; the helpers block only on the
directory listings and file reads their docstrings name.
"""

from __future__ import annotations

import glob
import json
import os
import re
from _thread import allocate_lock
from importlib import import_module

from actors.upstream.regular import open_regular_file
from persistence.record import Record

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:  # aliases for annotations only: nothing is built at import (start-up cost)
    from collections.abc import Callable, Iterator, Mapping
    from typing import Literal, TypeAlias

    from actors.upstream.reading import Reading

    Holds: TypeAlias = Literal["file", "store"]
    Locations: TypeAlias = Callable[[Mapping[str, str], str], list[str]]

__all__ = [
    "HEAD_BYTES",
    "MISSING",
    "Candidate",
    "Source",
    "StoreRow",
    "epoch_ms_of",
    "glob_sessions",
    "in_subfolders",
    "json_head",
    "named_by",
    "no_name",
    "note_store_problem",
    "only_itself",
    "string_field",
    "unreadable_store",
]

MISSING = "missing"
"""The marker key of a link told missing (``upstream_missing``): since when, epoch ms.

The link is kept, so a source that comes back (moved back, restored, ``git stash
pop``) is read on from where it was (issue 34 item 2); a scan that finds it again
commits a marker without the key. Scans of a source still gone are quiet."""

class Candidate(Record):
    """One upstream session found in a catalog (a value: :class:`~persistence.record.Record`).

    Attributes:
        source: the source's :attr:`Source.name` (``"claude"``, ...).
        path: the transcript file (a store source: the database).
        thread_id: the tool's own session or thread id.
    """

    __slots__ = ("path", "source", "thread_id")

    def __init__(self, source: str, path: str, thread_id: str) -> None:
        self.source = source
        self.path = path
        self.thread_id = thread_id


class StoreRow(Record):
    """One top-level session of a store source, as the prompt hook lists it (a value).

    Attributes:
        session_id: the session id.
        directory: the project directory it ran in, when the store says.
        seq: its change indicator; a store source's scan marker keeps the
            value it last read under ``"seq"``, so ``seq != marker["seq"]``
            means the session may hold news.
        created_ms: when it began, epoch ms, when known.
    """

    __slots__ = ("created_ms", "directory", "seq", "session_id")

    def __init__(self, session_id: str, directory: str | None, seq: int,
                 created_ms: int | None = None) -> None:
        self.session_id = session_id
        self.directory = directory
        self.seq = seq
        self.created_ms = created_ms


HEAD_BYTES = 256 * 1024
"""How much of a transcript's start :func:`json_head` searches."""
_CWD = re.compile(rb'"cwd"\s*:\s*("(?:[^"\\]|\\.)*")')
_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*("(?:[^"\\]|\\.)*")')


def string_field(pattern: re.Pattern[bytes], head: bytes) -> str | None:
    """The first JSON string value ``pattern`` (one group: the quoted string) finds in
    ``head``, decoded; ``None`` when absent or empty (pure)."""
    return _string(pattern, head)


def _string(pattern: re.Pattern[bytes], head: bytes) -> str | None:
    match = pattern.search(head)
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, str) and value else None


def epoch_ms_of(stamp: str | None) -> int | None:
    """An ISO-8601 time (``Z`` or an offset; naive means UTC) as epoch ms, or ``None``."""
    if stamp is None:
        return None
    from datetime import UTC, datetime  # noqa: PLC0415 - only for a transcript new to the hook's cache

    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def json_head(path: str) -> tuple[str | None, int | None]:
    """``(cwd, started_ms)`` from a JSONL transcript's first ``cwd`` and ``timestamp`` fields.

    Reads at most :data:`HEAD_BYTES`; either is ``None`` when not written
    (yet). Caller's thread; never raises.
    """
    try:
        with open_regular_file(path) as file:
            head = file.read(HEAD_BYTES)
    except (OSError, ValueError):
        return None, None
    return _string(_CWD, head), epoch_ms_of(_string(_TIMESTAMP, head))


def only_itself(path: str) -> tuple[str, ...]:
    """The files a scan of a transcript at ``path`` reads: ``(path,)`` (pure)."""
    return (path,)


def no_name(path: str, thread_id: str) -> None:
    """A source whose sessions have no title of their own and no fallback: ``None``."""
    return


def named_by(module: str) -> Callable[[str, str], str | None]:
    """The :attr:`Source.session_name` of a source whose ``module`` (dotted, e.g.
    ``"actors.upstream.claude.title"``) defines ``title(path, thread_id) -> str | None``.

    The module is imported on the first call, not here: ``ssa hook`` loads
    every source's light half at every prompt and never shows a name. Any
    thread; the returned function raises what the import or ``title`` raise
    (:func:`actors.upstream.names.name_of` turns that into ``None``).
    """

    def session_name(path: str, thread_id: str) -> str | None:
        title: Callable[[str, str], str | None] = import_module(module).title
        return title(path, thread_id)

    return session_name


class Source(Record):
    """One upstream source: a coding agent's session format (a value: never changed).

    Attributes:
        name: the ``source`` value stored on links and given to ``adopt``
            (``"claude"``); also the session keys ``ssa watch`` makes.
        title: the tool's name for people (``"Claude Code"``).
        flag: ``ssa watch``'s catalog option without dashes (``--claude``);
            the parsed value is ``args.<name>``.
        metavar: what the option takes (``"DIR"``, ``"DB"``).
        holds: ``"file"`` (one session per transcript file, under a catalog
            directory) or ``"store"`` (sessions are rows of one database file,
            which is the catalog; adoption needs the session id).
        locations: ``(environment, home) -> its standard catalog roots``
            (whether or not they exist), honouring its environment overrides.
        discover: ``root -> sessions`` found there (a missing root: none;
            never raises).
        no_link: why a session it adopts without an upstream link gets
            none, in a person's words (``"not a Pi session file"``).
        reading: loads and returns the heavy half (cached by the source).
        watch_files: the files whose changes may hold news for a link at
            ``path`` (its change fingerprint: a stat of each).
        rows: a store source's top-level sessions with their directory and
            change indicator, ``(db, busy_timeout_ms) -> rows`` (``[]`` for a
            missing or unreadable store); ``None`` for file sources.
        head: a file source's ``(cwd, started_ms)`` from a transcript's
            head (default :func:`json_head`).
        session_name: ``(path, thread_id) -> name or None``: the session's
            title in the tool (its own, else the first words the person
            typed), read from the tool's files at call time and never stored
            (:func:`named_by` its ``title`` module; default :func:`no_name`).
            Bounded reads; should not raise (:func:`actors.upstream.names.name_of`
            guards it).
    """

    __slots__ = (
        "discover",
        "flag",
        "head",
        "holds",
        "locations",
        "metavar",
        "name",
        "no_link",
        "reading",
        "rows",
        "session_name",
        "title",
        "watch_files",
    )

    def __init__(self, name: str, title: str, flag: str, metavar: str, holds: Holds,
                 locations: Locations, discover: Callable[[str], Iterator[Candidate]],
                 no_link: str, reading: Callable[[], Reading],
                 watch_files: Callable[[str], tuple[str, ...]] = only_itself,
                 rows: Callable[[str, int], list[StoreRow]] | None = None,
                 head: Callable[[str], tuple[str | None, int | None]] = json_head,
                 session_name: Callable[[str, str], str | None] = no_name) -> None:
        self.name = name
        self.title = title
        self.flag = flag
        self.metavar = metavar
        self.holds = holds
        self.locations = locations
        self.discover = discover
        self.no_link = no_link
        self.reading = reading
        self.watch_files = watch_files
        self.rows = rows
        self.head = head
        self.session_name = session_name


def glob_sessions(source: str, root: str, pattern: str,
                  thread_of: Callable[[str], str]) -> Iterator[Candidate]:
    """The transcripts under ``root`` matching ``pattern``, as candidates of ``source``.

    Args:
        source: the source's name.
        root: the catalog directory (missing: nothing is found).
        pattern: a glob relative to ``root`` (``"*/*.jsonl"``, ``"**/x-*.jsonl"``).
        thread_of: the session id from a file's name without its suffix.

    Sorted by path components, as :mod:`pathlib` sorts. Strings, no ``Path`` per
    file: thousands of sessions are listed at every prompt of ``ssa hook``.
    Caller's thread; blocks on the listing; never raises.
    """
    if not os.path.isdir(root):
        return
    paths = sorted(glob.glob(os.path.join(glob.escape(root), pattern),
                             recursive=True, include_hidden=True),
                   key=lambda p: p.split(os.sep))
    for path in paths:
        stem = os.path.splitext(os.path.basename(path))[0]
        yield Candidate(source=source, path=path, thread_id=thread_of(stem))


def in_subfolders(root: str, *names: str) -> list[str]:
    """``<root>/<folder>/<names...>`` for each folder directly in ``root`` whose name does
    not start with a dot (a folder of projects), whether or not that path exists.

    Sorted by path components, as :mod:`pathlib` sorts (``a`` before ``a-b``).
    Caller's thread; blocks on one listing and a ``stat`` per entry; never raises
    (an unreadable ``root``: ``[]``).
    """
    try:
        entries = os.listdir(root)
    except OSError:
        return []
    found = [os.path.join(root, entry, *names) for entry in entries
             if not entry.startswith(".") and os.path.isdir(os.path.join(root, entry))]
    return sorted(found, key=lambda path: path.split(os.sep))


_unreadable: dict[str, str] = {}
"""Stores that could not be listed, with why (each reported once per reason)."""
_unreadable_lock = allocate_lock()


def note_store_problem(db: str, why: str | None) -> bool:
    """Remember why listing the store ``db`` failed (``None``: it worked); any thread.

    Returns:
        Whether ``why`` is new for ``db`` (a discovery that runs every
        interval logs a failure once per reason).
    """
    with _unreadable_lock:
        if why is None:
            _unreadable.pop(db, None)
            return False
        new = _unreadable.get(db) != why
        _unreadable[db] = why
        return new


def unreadable_store(db: str | os.PathLike[str]) -> str | None:
    """Why the last listing of the store ``db`` failed, or ``None`` (any thread)."""
    with _unreadable_lock:
        return _unreadable.get(os.fspath(db))
