"""Claude Code rows copied into a new session file from an earlier session (issue 22, class 2).

When a conversation goes on under a new session id (``claude --continue
--fork-session``, ``--resume ID --fork-session``, a client that continues a
conversation in a new file), Claude Code 2.1.328 starts a new transcript
(``mode``, ``permission-mode``, ``atis-latch`` and ``file-history-snapshot``
rows first) and then writes the earlier session's rows into it, each with its
``uuid``, ``timestamp`` and ``promptSource`` kept and ``sessionId`` rewritten.
The prompts among them were typed in the earlier session, which is where
they count. ``/branch`` marks every copy with ``forkedFrom`` (decided by the
row alone, :mod:`actors.upstream.claude.classify`); ``--fork-session`` copies carry no
such field on user rows (only the copied assistant rows name their
``requestSessionId``), so they are recognised here, across the project's
transcripts:

* a typed row is a copy when another transcript of the same project
  directory (``<slug>/*.jsonl``) holds a row with the same ``uuid``; only
  transcripts written at or after the row's ``timestamp`` can hold the
  original, so a prompt typed just now costs one ``stat`` per sibling and
  reads none of them (unless another session is being written at the
  same moment);
* unless that other transcript says it copied from this one (a
  ``forkedFrom`` naming this session, or a copied assistant row's
  ``requestSessionId`` naming it): then this file holds the original and
  the row counts here.

Before the siblings, the file itself is asked
(:mod:`actors.upstream.claude.copyblock`, issue 32): a typed row made no later
than the newest row of the file's copied block that names the earlier session
(another ``sessionId``, a copied assistant row's ``requestSessionId``) is a
copy, wherever its original is, or whether it still exists.

Conservative both ways: an unreadable sibling proves nothing (the row
counts), and a copy that neither its own file nor a sibling proves counts.
Runs in the caller's thread (the monitor's scan, ``ssa classify``);
blocks on directory listing and bounded reads; never raises.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

import msgspec

from actors.upstream.claude.classify import classify_claude_line
from actors.upstream.claude.copyblock import copy_boundary
from actors.upstream.common import Unit, epoch_ms
from actors.upstream.files import open_regular

__all__ = ["claude_copy_classifier", "copied_from_elsewhere"]

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20
"""Bytes read from a sibling transcript at a time while searching it."""
SLACK_MS = 2_000
"""A sibling modified this long before the row's time is still searched (clock skew)."""


class _Ids(msgspec.Struct, rename="camel"):
    uuid: object = None
    timestamp: object = None


_IDS = msgspec.json.Decoder(_Ids)


def _search(path: str, needles: tuple[bytes, ...]) -> set[bytes] | None:
    """Which of ``needles`` occur in the file ``path`` (``None``: it cannot be read)."""
    found: set[bytes] = set()
    keep = max(len(n) for n in needles) - 1
    tail = b""
    handle = open_regular(path)
    if handle is None:
        return None
    try:
        with handle:
            while True:
                chunk = handle.read(CHUNK_BYTES)
                if not chunk:
                    return found
                window = tail + chunk
                found.update(n for n in needles if n not in found and n in window)
                if len(found) == len(needles):
                    return found
                tail = window[-keep:] if keep else b""
    except OSError:
        return None


def copied_from_elsewhere(path: str, row_uuid: str, occurred_at: int | None) -> bool:
    """Whether the row ``row_uuid`` of the transcript ``path`` is a copy of another
    transcript's row (see the module docstring).

    Args:
        path: the Claude Code transcript holding the row.
        row_uuid: the row's ``uuid``.
        occurred_at: the row's ``timestamp`` in epoch ms (``None``: every
            sibling is searched).

    Returns ``False`` whenever nothing proves a copy. Never raises.
    """
    directory, own_name = os.path.split(path)
    own_id = own_name.removesuffix(".jsonl")
    needle = f'"uuid":"{row_uuid}"'.encode()
    ours = (f'"forkedFrom":{{"sessionId":"{own_id}"'.encode(),
            f'"requestSessionId":"{own_id}"'.encode())
    try:
        own = os.stat(path)
        entries = list(os.scandir(directory or "."))
    except OSError:
        return False
    for entry in entries:
        if entry.name == own_name or not entry.name.endswith(".jsonl"):
            continue
        try:
            if not entry.is_file():
                continue
            info = entry.stat()
        except OSError:
            continue
        if (info.st_dev, info.st_ino) == (own.st_dev, own.st_ino):
            continue  # this very file under another name (a link to it)
        modified_ms = info.st_mtime_ns // 1_000_000
        if occurred_at is not None and modified_ms < occurred_at - SLACK_MS:
            continue  # last written before the row existed: cannot hold it
        found = _search(entry.path, (needle, *ours))
        if found is None or needle not in found:
            continue
        if found & set(ours):
            continue  # that file copied from this one: this one holds the original
        logger.debug("a typed Claude Code row is a copy from another session's transcript")
        return True
    return False


def claude_copy_classifier(path: str) -> Callable[[bytes], Unit]:
    """:func:`~actors.upstream.claude.classify.classify_claude_line` for the transcript ``path``,
    where a typed row copied from an earlier session is ``copied_row``.

    Reads the file's copied block now (:func:`~actors.upstream.claude.copyblock.copy_boundary`:
    a typed row made no later than its boundary is a copy). Then only rows
    decided typed are checked against the siblings (the row's ``uuid`` is read
    again from the line; a row without one stays typed). The returned callable
    runs in the caller's thread, blocks only as :func:`copied_from_elsewhere`
    does and never raises.
    """
    boundary = copy_boundary(path)

    def classify(line: bytes) -> Unit:
        unit = classify_claude_line(line)
        if not unit.human:
            return unit
        if boundary is not None and unit.occurred_at is not None and unit.occurred_at <= boundary:
            logger.debug("a typed Claude Code row predates its file's copied block's end: a copy")
            return Unit(human=False, reason="copied_row", occurred_at=unit.occurred_at)
        try:
            ids = _IDS.decode(line)
        except (msgspec.MsgspecError, RecursionError):
            return unit
        if not isinstance(ids.uuid, str) or not ids.uuid or '"' in ids.uuid or "\\" in ids.uuid:
            return unit
        when = unit.occurred_at if unit.occurred_at is not None else epoch_ms(ids.timestamp)
        if copied_from_elsewhere(path, ids.uuid, when):
            return Unit(human=False, reason="copied_row", occurred_at=unit.occurred_at)
        return unit

    return classify
