"""Commands the persistence actor applies, and what it answers.

Commands are frozen, tagged msgspec Structs with tuple fields (never lists):
Pykka does not copy messages, so immutability is what makes sharing them
between threads safe (style anchors §7.2).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from persistence.records import SessionStateEvent, UpstreamLink

__all__ = [
    "AckOutcome",
    "Acknowledge",
    "ActivityState",
    "ClaimLink",
    "ClaimWakes",
    "Command",
    "CommitScan",
    "DeleteOutcome",
    "DeleteSession",
    "HostWatchers",
    "LinkOutcome",
    "NoteActivity",
    "NoteOwnText",
    "NoticeDescriptor",
    "Prune",
    "RecordEvent",
    "RecordOutcome",
    "RegisterOutcome",
    "RegisterWatch",
    "ReleaseLeases",
    "ResetWatcher",
    "ScanOutcome",
    "SetRole",
    "SweepOutcome",
    "Unwatch",
    "UpsertLink",
    "UpsertSession",
    "WriteRequest",
]

Provenance = Literal["explicit", "ambient-group"]


class _Message(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every persistence message."""


class RecordEvent(_Message, frozen=True, tag="record"):
    """Insert one event, bump its session's head and update cursors (anchor §3.2).

    ``watcher_keys`` are producer-passed watchers, already filtered to
    agent-qualified keys. ``only_if_watched`` skips the insert when no cursor
    targets the session and no producer watcher was passed.
    ``ambient_watcher`` is registered as an ``ambient-group`` watcher first
    (inside the same transaction) when it holds no cursor on the session.
    ``shape`` says how the session's stored entry fills these fields, read
    in the same transaction (see :func:`persistence.shaping.shape_record`).
    """

    session_key: str
    agent_id: str
    kind: str
    actor_type: str
    summary: str
    session_id: str | None = None
    actor_id: str | None = None
    run_id: str | None = None
    dedupe_key: str | None = None
    payload_json: str | None = None
    occurred_at: int | None = None
    watcher_keys: tuple[str, ...] = ()
    only_if_watched: bool = False
    ambient_watcher: str | None = None
    spawned_by: str | None = None
    shape: Literal["none", "entry-watchers", "human", "human-per-group"] = "none"


class RegisterWatch(_Message, frozen=True, tag="register"):
    """Register ``watcher_key`` on a target at the target's head (anchor §3.11/§3.12).

    ``since``: a new watch starts as if registered at that state version, so
    the target's changes after it that are already in the log are pending as
    one notice (an existing watch is kept as it is).
    """

    watcher_key: str
    target_key: str
    target_agent_id: str
    provenance: Provenance = "explicit"
    since: int | None = None


class Unwatch(_Message, frozen=True, tag="unwatch"):
    """Drop ``watcher_key``'s cursor on a target (answers whether one was dropped)."""

    watcher_key: str
    target_key: str
    target_agent_id: str


class Acknowledge(_Message, frozen=True, tag="ack"):
    """Acknowledge drained notices: cursor moves to the frozen watermark (anchor §3.7)."""

    watcher_key: str
    targets: tuple[tuple[str, str], ...]
    last_seen: tuple[int, ...] = ()
    """Per target, the ``last_seen`` of the notice text the watcher was shown: a
    target whose open notice changed since (another process drained it, a
    reset dropped it) is not acknowledged. Empty: acknowledge whatever is open."""


class Prune(_Message, frozen=True, tag="prune"):
    """Apply retention and the row cap; ``force`` ignores the hourly throttle."""

    force: bool = False


class UpsertSession(_Message, frozen=True, tag="upsert-session"):
    """Create a session entry or update the fields that are not ``None``."""

    session_key: str
    agent_id: str
    session_id: str | None = None
    spawned_by: str | None = None
    chat_type: str | None = None


class ResetWatcher(_Message, frozen=True, tag="reset"):
    """A new incarnation: drop the cursors this session holds as a watcher."""

    session_key: str
    agent_id: str
    session_id: str | None = None


class DeleteSession(_Message, frozen=True, tag="delete"):
    """Drop a session's events, head, entry and every cursor naming it."""

    session_key: str
    agent_id: str


class UpsertLink(_Message, frozen=True, tag="upsert-link"):
    """Create or refresh an upstream link, recording ``adopted`` with it (anchor §3.15).

    On an existing link a same-source refresh keeps its marker and scan
    progress; a changed source (host, thread, ref) rebases to ``marker_json``.
    """

    session_key: str
    agent_id: str
    source: str
    host_id: str
    thread_id: str
    upstream_ref_json: str
    source_key: str
    marker_json: str
    adopted: RecordEvent | None = None
    watcher_key: str | None = None
    """Also register this explicit watch of the session, in the same transaction."""
    lease_owner: str | None = None
    """A new link starts with this process's scan lease (until ``lease_expires_at``)."""
    lease_expires_at: int = 0


class CommitScan(_Message, frozen=True, tag="commit-scan"):
    """Apply one scan's result atomically, if the link is unchanged (anchor §3.16).

    Compare-and-set: nothing happens unless the link still has
    ``expected_updated_at`` and ``source_key``. Then ``record`` (if any) is
    recorded, the marker moves to ``marker_json`` (if given) and, with
    ``drop_link``, the link is deleted: all in one transaction, so a crash
    can repeat a scan but never lose or double a turn.
    """

    session_key: str
    agent_id: str
    expected_updated_at: int
    source_key: str
    marker_json: str | None = None
    record: RecordEvent | None = None
    drop_link: bool = False
    lease_owner: str | None = None
    """Renew this owner's scan lease to ``lease_expires_at`` with the marker."""
    lease_expires_at: int = 0
    own_texts_used: tuple[int, ...] = ()
    """Positions of the session's own texts the scanned rows matched: deleted with the
    marker's move (a record is used up by the row it matches)."""
    own_texts_expired_before: int | None = None
    """Own texts noted before this time (epoch ms) expired unmatched: deleted too."""


class HostWatchers(_Message, frozen=True, tag="host"):
    """Take (``release``: drop) this process's hosting leases on ``watchers``."""

    host_id: str
    watchers: tuple[str, ...]
    expires_at: int
    release: bool = False


class ClaimWakes(_Message, frozen=True, tag="claim-wakes"):
    """Renew ``host_id``'s leases on ``watchers`` and take the wakes addressed to them."""

    host_id: str
    watchers: tuple[str, ...]
    expires_at: int


class ClaimLink(_Message, frozen=True, tag="claim-link"):
    """Take or renew the scan lease of one upstream link; answers whether it is held."""

    session_key: str
    agent_id: str
    owner: str
    expires_at: int


class ReleaseLeases(_Message, frozen=True, tag="release-leases"):
    """Drop every hosting and scan lease of ``host_id`` (a clean close).

    Wakes still owed to its watchers go to whichever process hosts them next.
    """

    host_id: str


class NoteOwnText(_Message, frozen=True, tag="own-text"):
    """Remember the hash of a text the gateway sent into an upstream session."""

    session_key: str
    agent_id: str
    text_hash: str
    window: int = 10


class SetRole(_Message, frozen=True, tag="set-role"):
    """Make a session a manager (with or without wakes), or a worker again.

    A worker (no row) is never notified and never woken: becoming one drops
    the session's cursors as a watcher, so its open notices go with them.
    Answers whether anything changed.
    """

    session_key: str
    agent_id: str
    role: Literal["manager", "worker"]
    wake: bool = True


ActivityState = Literal["busy", "idle", "waiting", "finished", "failed"]
"""Where a session's tool stands (see :class:`~persistence.records.WorkerActivity`)."""


class NoteActivity(_Message, frozen=True, tag="note-activity"):
    """Where a session's tool stands now, as its own hook told (issue 33 item 2).

    Answers whether the stored state changed. A note older than the stored
    one (hooks run concurrently) changes nothing; the same state and detail
    again keep their ``since``.
    """

    session_key: str
    agent_id: str
    state: ActivityState
    at: int
    """When the tool's hook saw it, epoch ms."""
    detail: str | None = None
    """``permission`` or ``input`` (waiting), an outcome (failed), or ``None``."""
    restart: bool = False
    """A new spell of the same state (a second permission prompt after the first was
    answered): ``since`` restarts at ``at``."""


Command = (
    RecordEvent | RegisterWatch | Unwatch | Acknowledge | Prune | UpsertSession
    | ResetWatcher | DeleteSession | UpsertLink | CommitScan | NoteOwnText
    | HostWatchers | ClaimWakes | ClaimLink | ReleaseLeases | SetRole | NoteActivity
)


command_decoder = msgspec.json.Decoder(Command)
"""Typed decoder of :data:`Command`, built at import time so a bad union fails early."""


class NoticeDescriptor(msgspec.Struct, frozen=True, kw_only=True):
    """The committed notice state of one watcher/target pair.

    Attributes:
        watcher_key: who is told.
        target_key: the session that changed.
        target_agent_id: its agent.
        last_seen: the cursor's acknowledged position: the notice says
            ``changesSince <last_seen>``.
        queue_only: ambient notice: replace in the queue, never wake.
        pending: ``False`` means the pair no longer has an open notice.
        version: commit-order stamp of the command within this process.
        wake: this transaction opened the notice, it is eligible for a wake
            and this process runs that wake (no live other process hosts the
            watcher; otherwise a wake row was addressed to the hosts).
    """

    watcher_key: str
    target_key: str
    target_agent_id: str
    last_seen: int
    queue_only: bool
    pending: bool
    version: int
    wake: bool = False


class RecordOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Result of :class:`RecordEvent`: the event (new or deduplicated) and notices."""

    event: SessionStateEvent | None
    inserted: bool
    notices: tuple[NoticeDescriptor, ...] = ()


class RegisterOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Result of :class:`RegisterWatch`."""

    registered: bool
    version: int


class AckOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Result of :class:`Acknowledge`: follow-up notices and the commit stamp."""

    version: int
    notices: tuple[NoticeDescriptor, ...]
    acknowledged: tuple[tuple[str, str], ...] = ()
    """The targets whose open notice this acknowledgement consumed."""


class SweepOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Result of the restart sweep (``_writes.sweep_cursors``): one descriptor per pending pair."""

    notices: tuple[NoticeDescriptor, ...]


class DeleteOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Result of :class:`DeleteSession`: watchers whose cursor on it was dropped."""

    version: int
    watchers: tuple[str, ...]


class LinkOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Result of :class:`UpsertLink`: the stored link, whether it rebased, the event."""

    link: UpstreamLink
    created: bool
    rebased: bool
    adopted: RecordOutcome | None = None


class ScanOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """Result of :class:`CommitScan`: ``applied`` is ``False`` when the link changed."""

    applied: bool
    record: RecordOutcome | None = None
    updated_at: int | None = None
    """The link's ``updated_at`` after a marker advance (``None``: dropped or not applied)."""


class WriteRequest(msgspec.Struct, frozen=True, kw_only=True, tag="write"):
    """Envelope: a command and the future its requester waits on (group commit)."""

    command: Command
    reply: Any  # persistence._reply.Reply (or any object with set/set_exception)
