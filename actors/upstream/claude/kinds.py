"""Claude Code's row kinds: which ``type`` values are known, and unknown ones logged once.

Claude Code's transcripts hold many metadata row kinds besides ``user`` and
``assistant``; :data:`KNOWN_ROW_KINDS` lists those this release knows are
not a person's turn. Any other kind is ``unknown_kind``, logged once per
process under :mod:`actors.upstream.claude.classify`'s logger. Thread-safe.
"""

from __future__ import annotations

import logging

from actors.upstream.common import Unit
from actors.upstream.kindlog import log_unknown_kind

__all__ = ["KNOWN_ROW_KINDS"]

logger = logging.getLogger("actors.upstream.claude.classify")  # the classifier's own logger

_NOT_USER = Unit(human=False, reason="not_user")
_UNKNOWN_KIND = Unit(human=False, reason="unknown_kind")

KNOWN_ROW_KINDS = frozenset({
    # Claude Code 2.1.328's own table of transcript entry kinds (how its loader
    # treats each: "message" kinds first, then metadata it ignores, clears or
    # keeps the last of), read from the shipped binary; docs/upstream-rows.md.
    "user", "assistant", "system", "attachment", "progress",
    "queue-operation", "api-request", "api-request-resumed", "api-request-shape",
    "api-request-blob", "frame-link", "observer-ref", "continued-in", "resume-head-vouch",
    "file-history-snapshot", "file-history-delta", "attribution-snapshot", "custom-title",
    "ai-title", "tag", "relocated", "agent-name", "agent-color", "agent-setting", "mode",
    "permission-mode", "session-owner", "isolation-latch", "dev-mods", "atis-latch",
    "worktree-state", "bridge-session", "tools-used", "data-flow-records",
    "data-flow-incomplete", "derived-from", "summary", "pr-link", "history-suppression",
    "ended-by-model", "cost-state", "last-prompt", "content-replacement", "memory-mode",
    "artifact-comment-monitor", "artifact-autoreact-ledger", "fork-context-ref", "repl-mode",
    # Older builds (upstream-formats.md §2.3).
    "marble-origami-commit", "marble-origami-snapshot", "speculation-accept",
})
"""Row ``type`` values Claude Code writes that are known not to be a person's turn
(``user`` aside); any other is ``unknown_kind``."""


def _other_kind(kind: object) -> Unit:
    """A row that is not ``user`` or ``attachment``: known metadata, or an unknown kind.

    An unknown kind is logged once per process (its name only, when it looks
    like one; :func:`~actors.upstream.kindlog.log_unknown_kind`).
    """
    if isinstance(kind, str) and kind in KNOWN_ROW_KINDS:
        return _NOT_USER
    if kind is None:
        return _NOT_USER
    log_unknown_kind(logger, "Claude Code", kind)
    return _UNKNOWN_KIND
