"""Rows a Codex fork replayed from its parent into its own rollout (issue 32 item 1).

Checked with the real 0.169.0 binary (``codex exec fork ID PROMPT``, the
harness's fake model): forking a **paginated** thread writes a new rollout
holding none of the parent's rows (``forked_from_id``; the ``ordinal`` goes
on from the parent's). Forking a **legacy** thread (one an older build
wrote) writes a new rollout whose first line is the fork's ``session_meta``
(``forked_from_id``, ``history_mode: "legacy"``), then the parent's rows
replayed, the parent's own ``session_meta`` first, every line re-stamped
to the fork's instant in one burst, then the fork's own turn. The replayed
prompts were typed in the parent, where they count.

Rule, from the rollout itself (the parent is never read): in a rollout whose
first line is a non-paginated ``session_meta`` (naming ``forked_from_id``, or
``forked_from`` as builds of January 2026 wrote, or no parent at all as builds
before them did) and whose next line replays another thread's
``session_meta``, the fork's own start is its
first line after that replayed meta that is certainly its own: a
``response_item`` whose ``internal_chat_message_metadata_passthrough.create_time``
is not before the fork (0.169.0 writes its turn's context items so, before
the prompt; a replayed item keeps its older time or has none), or any line
stamped more than :data:`BURST_MS` after the fork (the burst is over). A
typed row stamped before that start is a copy; while no start is seen yet,
one stamped within the burst is.

Conservative: a rollout that replays no other thread's ``session_meta``, or
a line whose time does not parse, proves no copy. Limit: a fork written by a
build that stamps no ``create_time``, with a first prompt given on the
command line (written within the burst), loses that prompt.

:func:`fork_replay` reads the first line of a rollout per call, and only for a
legacy fork up to its own start (at most :data:`HEAD_BYTES`). Runs in the
caller's thread; never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

import msgspec

from actors.upstream.codex.turns import codex_turn_classifier
from actors.upstream.common import Unit, epoch_ms
from actors.upstream.files import open_regular

__all__ = ["BURST_MS", "HEAD_BYTES", "ForkReplay", "codex_copy_classifier", "fork_replay",
           "replay_of"]

logger = logging.getLogger(__name__)

BURST_MS = 1000
"""How long after a fork's ``session_meta`` its replayed rows can be stamped."""
HEAD_BYTES = 16 << 20
"""Most bytes of a rollout's head read for its replayed block."""


class _Passthrough(msgspec.Struct):
    create_time: object = None


class _Payload(msgspec.Struct):
    id: object = None
    forked_from_id: object = None
    history_mode: object = None
    internal_chat_message_metadata_passthrough: _Passthrough | None = None


class _Line(msgspec.Struct):
    type: object = None
    timestamp: object = None
    payload: _Payload | None = None


_LINE = msgspec.json.Decoder(_Line)


class ForkReplay(msgspec.Struct, frozen=True):
    """What a forked rollout's head says about its replayed rows.

    Attributes:
        forked_at: the fork's ``session_meta`` line time (epoch ms).
        own_start: the time of its first certainly-own line, or ``None`` when
            none was written yet.
    """

    forked_at: int
    own_start: int | None

    def is_copy(self, occurred_at: int | None) -> bool:
        """Whether a typed row stamped ``occurred_at`` (epoch ms) was replayed (pure)."""
        if occurred_at is None:
            return False
        if self.own_start is not None:
            return occurred_at < self.own_start
        return occurred_at <= self.forked_at + BURST_MS


def _decode(line: bytes) -> _Line | None:
    try:
        return _LINE.decode(line)
    except (msgspec.MsgspecError, RecursionError):
        return None


def replay_of(lines: Iterable[bytes]) -> ForkReplay | None:
    """:class:`ForkReplay` of a rollout's complete ``lines`` (read only as far as needed), or
    ``None`` when it is not a legacy fork that replays another thread's rows. Pure; never
    raises."""
    rows = iter(lines)
    first = _decode(next(rows, b""))
    meta = first.payload if first is not None else None
    if first is None or meta is None or first.type != "session_meta":
        return None
    # The parent may be named (``forked_from_id``, or ``forked_from`` in the builds of
    # January 2026) or not at all (before): the replayed meta right after is the proof.
    if meta.history_mode == "paginated":
        return None
    forked_at = epoch_ms(first.timestamp)
    if forked_at is None:
        return None
    replaying = False
    for raw in rows:
        line = _decode(raw)
        if line is None or line.payload is None:
            continue
        if not replaying:
            replaying = line.type == "session_meta" and line.payload.id != meta.id
            if not replaying and line.type != "session_meta":
                return None  # the fork's own rows come first: nothing was replayed
            continue
        at = epoch_ms(line.timestamp)
        if at is not None and at > forked_at + BURST_MS:
            return ForkReplay(forked_at, at)
        passthrough = line.payload.internal_chat_message_metadata_passthrough
        created = passthrough.create_time if passthrough is not None else None
        if (line.type == "response_item" and isinstance(created, int | float)
                and not isinstance(created, bool) and created * 1000 >= forked_at
                and at is not None):
            return ForkReplay(forked_at, at)
    return ForkReplay(forked_at, None) if replaying else None


def _lines(handle: BinaryIO) -> Iterator[bytes]:
    """The complete lines of the first :data:`HEAD_BYTES` of ``handle``."""
    read = 0
    while read < HEAD_BYTES:
        line = handle.readline(HEAD_BYTES - read)
        read += len(line)
        if not line.endswith(b"\n"):
            return
        yield line.rstrip(b"\r\n")


def fork_replay(path: str) -> ForkReplay | None:
    """:func:`replay_of` the head of the rollout ``path`` (at most :data:`HEAD_BYTES`, read
    line by line and only as far as the decision needs: one line for a rollout that is
    not a legacy fork; an unreadable file is ``None``). Caller's thread; blocks on bounded
    reads."""
    handle = open_regular(path)
    if handle is None:
        return None
    try:
        with handle:
            return replay_of(_lines(handle))
    except OSError:
        return None


def codex_copy_classifier(path: str) -> Callable[[bytes], Unit]:
    """:func:`~actors.upstream.codex.turns.codex_turn_classifier` for the rollout ``path``,
    where a typed row a legacy fork replayed from its parent is ``copied_row``.

    Reads the rollout's head now (:func:`fork_replay`). The returned callable
    runs in the caller's thread, is not thread-safe (one per scan) and never
    raises; it logs no text.
    """
    classify = codex_turn_classifier(path)
    replay = fork_replay(path)
    if replay is None:
        return classify

    def decide(line: bytes) -> Unit:
        unit = classify(line)
        if unit.human and replay.is_copy(unit.occurred_at):
            logger.debug("a typed Codex row a fork replayed from its parent: a copy")
            return Unit(human=False, reason="copied_row", occurred_at=unit.occurred_at)
        return unit

    return decide
