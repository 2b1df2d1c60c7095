"""Gateway configuration (``api-contract.md``, ``Gateway.open``)."""

from __future__ import annotations

import math
from typing import Literal

import msgspec

from actors.errors import InvalidArgument

__all__ = ["GatewayConfig"]


class GatewayConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Frozen settings of one gateway. Every field has the contract's default.

    Attributes:
        scope: ``"per-sender"`` or ``"global"`` (bare ``global`` key, no notices).
        group_scope: ``"per-group"`` makes the agent's main session an ambient
            watcher of its group and channel sessions; ``"main"`` does not.
        retention_days: events older than this, and cursors idle this long,
            are pruned.
        max_rows: the signal log keeps at most this many events (newest).
        changes_limit: most events one ``changesSince`` answer returns (1-200).
        upstream_interval_s: seconds between upstream monitor scans.
        upstream_initial_delay_s: seconds before the first upstream scan.
        scan_cap_bytes: most bytes one upstream scan reads per transcript.
        long_line_max_bytes: a transcript line longer than this (bytes, default
            64 MiB) is never a person's typed turn: it is decided not typed
            (``line_too_long``) as soon as a byte search shows its length, and
            passed without being parsed, so even a short-lived ``ssa hook``
            gets past it. A value below ``scan_cap_bytes`` acts as
            ``scan_cap_bytes`` (a line a scan reads whole is classified).
        own_text_window: own texts remembered for self-echo detection.
        own_text_ttl_ms: how long an own text may wait for the upstream row
            that echoes it, in ms; unmatched after this, it hides nothing. A
            row matching an own text uses it up.
        own_text_skew_ms: how much earlier than the gateway noted an own text
            the upstream tool's clock may date its echo, in ms; a row dated
            before that is a person's.
        opencode_replay_window: earlier OpenCode user messages that suppress replays.
        missing_threshold: consecutive missing scans before ``upstream_missing``.
        synchronous: SQLite ``synchronous`` (``"FULL"`` or ``"NORMAL"``).
        queue_limit: most entries in one watcher's notice queue (oldest dropped).
        ask_timeout_s: seconds any internal request may take before the call
            gives up (logged; producers return ``None``).
        busy_timeout_ms: how long a write waits for another process's lock, in
            ms (SQLite's write lock; PostgreSQL's advisory write lock, as
            ``lock_timeout``).
        prune_interval_ms: producer-triggered prunes run at most this often, in ms.
        max_cursor_actors: cursor actors kept in memory at once (the least
            recently used beyond this are stopped and restart from the
            database on demand). Actors have no thread of their own, so this bounds
            memory (a few KiB each), not threads.
        max_session_actors: session actors kept in memory at once; the least
            recently used beyond this stop and hand their queue to their
            successor.
        max_monitor_actors: upstream monitor actors kept in memory at once.
        read_connections: read-only connections shared by caller threads.
        worker_threads: most worker threads of the actor runtime's dispatcher
            (upstream scans, late publishes); every other actor runs on the
            threads that call the gateway.
        async_call_threads: most threads an :class:`~actors.AsyncGateway` runs
            its awaited calls on (started on demand, reused); more concurrent
            awaits wait in a queue, off the event loop.
        upstream_notifications: with ``monitor=True``, also scan a link as soon
            as file notifications say its transcript changed (see
            ``Gateway.start_upstream_notifications``).
        vfs: the SQLite VFS to open the database with (``None``: the default);
            tests use a fault-injecting VFS registered with ``apsw``. Not
            used on PostgreSQL.
        lease_ms: how long a hosting or upstream-scan lease lasts without
            renewal, in ms (by the gateway's clock): the longest a dead
            process keeps a watcher's wakes or a link's scans from the others.
            Hosting leases are renewed every third of it. At least ten times
            ``probe_interval_ms``.
        probe_interval_ms: how often a process that hosts watchers checks
            the database for wakes other processes addressed to it, in ms
            (one ``PRAGMA data_version``; see ``Gateway.host``), while the
            log changes; while it is idle the period backs off to three times
            this, which bounds how late a wake is found. On PostgreSQL wakes
            are pushed (``LISTEN``) and this only paces retries after a
            failed claim.
    """

    scope: Literal["per-sender", "global"] = "per-sender"
    group_scope: Literal["per-group", "main"] = "per-group"
    retention_days: int = 30
    max_rows: int = 50_000
    changes_limit: int = 200
    upstream_interval_s: float = 60.0
    upstream_initial_delay_s: float = 15.0
    scan_cap_bytes: int = 1_048_576
    long_line_max_bytes: int = 67_108_864
    own_text_window: int = 10
    own_text_ttl_ms: int = 900_000
    own_text_skew_ms: int = 30_000
    opencode_replay_window: int = 50
    missing_threshold: int = 3
    synchronous: Literal["FULL", "NORMAL"] = "FULL"
    queue_limit: int = 20
    ask_timeout_s: float = 10.0
    busy_timeout_ms: int = 5000
    prune_interval_ms: int = 3_600_000
    max_cursor_actors: int = 16_384
    max_session_actors: int = 16_384
    max_monitor_actors: int = 16_384
    read_connections: int = 4
    worker_threads: int = 4
    async_call_threads: int = 8
    upstream_notifications: bool = True
    vfs: str | None = None
    lease_ms: int = 10_000
    probe_interval_ms: int = 10

    def __post_init__(self) -> None:
        """Validate field values.

        Raises:
            InvalidArgument: a field is out of range or not one of its choices.
        """
        if self.scope not in ("per-sender", "global"):
            raise InvalidArgument(f"scope must be 'per-sender' or 'global', not {self.scope!r}")
        if self.group_scope not in ("per-group", "main"):
            raise InvalidArgument(
                f"group_scope must be 'per-group' or 'main', not {self.group_scope!r}"
            )
        if self.synchronous not in ("FULL", "NORMAL"):
            raise InvalidArgument(
                f"synchronous must be 'FULL' or 'NORMAL', not {self.synchronous!r}"
            )
        if not 1 <= self.changes_limit <= 200:
            raise InvalidArgument("changes_limit must be between 1 and 200")
        for name in ("retention_days", "max_rows", "queue_limit", "max_cursor_actors",
                     "max_monitor_actors", "max_session_actors",
                     "read_connections", "worker_threads", "async_call_threads",
                     "own_text_window", "own_text_ttl_ms",
                     "opencode_replay_window",
                     "missing_threshold", "scan_cap_bytes", "long_line_max_bytes", "lease_ms",
                     "probe_interval_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidArgument(f"{name} must be a positive integer, not {value!r}")
        limits = {"retention_days": 36_500, "max_rows": 100_000_000, "queue_limit": 10_000,
                  "scan_cap_bytes": 1 << 30, "read_connections": 64,
                  "worker_threads": 64, "async_call_threads": 256, "lease_ms": 86_400_000,
                  "probe_interval_ms": 60_000, "own_text_ttl_ms": 86_400_000}
        for name, limit in limits.items():
            if getattr(self, name) > limit:
                raise InvalidArgument(f"{name} must be at most {limit}")
        for name in ("ask_timeout_s", "upstream_interval_s"):
            if not getattr(self, name) > 0:
                raise InvalidArgument(f"{name} must be positive")
        for name in ("ask_timeout_s", "upstream_interval_s", "upstream_initial_delay_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value > 86_400:
                raise InvalidArgument(f"{name} must be finite and at most one day")
        if isinstance(self.lease_ms, int) and isinstance(self.probe_interval_ms, int) \
                and self.lease_ms < 10 * self.probe_interval_ms:
            # A lease must outlive several probe periods (the idle ones are three
            # periods long), or a live host keeps losing it between renewals.
            raise InvalidArgument("lease_ms must be at least 10 times probe_interval_ms")
        if not isinstance(self.own_text_skew_ms, int) or isinstance(self.own_text_skew_ms, bool) \
                or not 0 <= self.own_text_skew_ms <= 3_600_000:
            raise InvalidArgument("own_text_skew_ms must be an integer from 0 to 3600000")
        if min(self.upstream_initial_delay_s, self.busy_timeout_ms, self.prune_interval_ms) < 0:
            raise InvalidArgument("delays and timeouts must not be negative")
