"""The closed set of signal-log event kinds and actor types (seed, "The signal log").

Pure data; importing it has no side effects.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = [
    "ACTOR_TYPES",
    "KINDS",
    "NOTIFY_BY_KIND",
    "RUN_OUTCOMES",
    "ActorType",
    "Kind",
]

Kind = Literal[
    "human_direct_message",
    "upstream_missing",
    "goal_changed",
    "child_spawned",
    "run_completed",
    "run_failed",
    "compacted",
    "adopted",
    "worker_waiting",
]
"""An event kind of the seed's table, and ``worker_waiting`` (beyond the seed, issue 33)."""

ActorType = Literal["human", "agent", "system"]
"""Who caused an event."""

NOTIFY_BY_KIND: Final[dict[str, bool]] = {
    "human_direct_message": True,
    "upstream_missing": True,
    "goal_changed": True,
    "child_spawned": False,  # seeds the parent's cursor instead
    "run_completed": False,  # log only
    "run_failed": False,  # log only
    "compacted": False,  # log only
    "adopted": False,  # log only
    # Beyond the seed (issue 33 item 2): an adopted session has waited for a permission
    # answer longer than its manager opted in to (ssa install --permission-wait MIN).
    "worker_waiting": True,
}
"""Whether each kind notifies watchers (seed table, "Notifies watchers")."""

KINDS: Final[frozenset[str]] = frozenset(NOTIFY_BY_KIND)
ACTOR_TYPES: Final[frozenset[str]] = frozenset({"human", "agent", "system"})
RUN_OUTCOMES: Final[frozenset[str]] = frozenset({"ok", "error", "timeout", "cancelled"})
