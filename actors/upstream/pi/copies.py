"""Pi entries copied into a forked session file (issue 22, class 2).

Every way Pi 0.73.1 starts a session from another one names the source in
the new file's header, ``parentSession`` (the source file's path), and
stamps the header with the moment of the copy
(``dist/core/session-manager.js``):

* ``pi --fork FILE`` (``SessionManager.forkFrom``) writes a new header
  (new ``id``, ``timestamp`` now, ``parentSession: FILE``) and then every
  non-header entry of FILE, unchanged: same ``id``, ``parentId``,
  ``timestamp`` and ``message.timestamp``;
* ``/fork`` and ``/tree`` branching (``createBranchedSession``) write a new
  header the same way and then the entries on the path to the chosen entry,
  unchanged;
* ``/new`` from a session (``newSession({parentSession})``) writes only the
  header.

Pi until 2026-01-01 (format v1, pi-mono ``484d7e06`` renamed the field) named
the source ``branchedFrom`` (``createBranchedSessionFromEntries``: the header
stamped now, then the entries before the branch point, unchanged); Pi's
migration to v3 keeps that name, so either field names the source.

A prompt in such a file that was created before the file's header was
typed in the earlier session, where it counts: it is ``copied_row`` here.
Every entry Pi writes into the new session itself is stamped after its
header (the same process's clock). Conservative: a header without
``parentSession``, or a header or prompt time that does not parse, proves
no copy (the prompt keeps its decision). The header is read once per
classifier (one bounded read of the first line).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import msgspec

from actors.upstream.common import Unit, epoch_ms
from actors.upstream.files import open_regular
from actors.upstream.pi.classify import classify_pi_line

__all__ = ["fork_time", "pi_copy_classifier"]

logger = logging.getLogger(__name__)

HEADER_BYTES = 64 * 1024
"""Most bytes of a session file's first line read for its header."""


class _Header(msgspec.Struct, rename="camel"):
    type: object = None
    timestamp: object = None
    parent_session: object = None
    branched_from: object = None


_HEADER = msgspec.json.Decoder(_Header)


def fork_time(first_line: bytes) -> int | None:
    """The copy time of a Pi session started from another: its header's ``timestamp``
    in epoch ms when the header names a ``parentSession`` (v1: ``branchedFrom``), else ``None``.

    Args:
        first_line: line 0 of the session file (with or without its newline).

    Pure (no I/O), thread-safe; never raises.
    """
    try:
        header = _HEADER.decode(first_line)
    except (msgspec.MsgspecError, RecursionError):
        return None
    parent = header.parent_session if header.parent_session is not None else header.branched_from
    if header.type != "session" or not isinstance(parent, str) or not parent:
        return None
    return epoch_ms(header.timestamp)


def _first_line(path: str) -> bytes:
    handle = open_regular(path)
    if handle is None:
        return b""
    try:
        with handle:
            return handle.readline(HEADER_BYTES).rstrip(b"\r\n")
    except OSError:
        return b""


def pi_copy_classifier(path: str) -> Callable[[bytes], Unit]:
    """:func:`~actors.upstream.pi.classify.classify_pi_line` for the session file ``path``,
    where a typed prompt copied from the parent session is ``copied_row``.

    Reads the file's first line now (at most :data:`HEADER_BYTES`; an
    unreadable file proves no copy). The returned callable is pure, runs in
    the caller's thread and never raises.
    """
    forked_at = fork_time(_first_line(path))
    if forked_at is None:
        return classify_pi_line

    def classify(line: bytes) -> Unit:
        unit = classify_pi_line(line)
        if unit.human and unit.occurred_at is not None and unit.occurred_at < forked_at:
            logger.debug("a typed Pi prompt predates its forked session's header: a copy")
            return Unit(human=False, reason="copied_row", occurred_at=unit.occurred_at)
        return unit

    return classify
