"""An Aider chat history's file name and the upstream session id of one.

Standard library only: the light half (:mod:`actors.upstream.aider.source`),
the heavy half and the kit's sample writer use it. Pure.
"""

from __future__ import annotations

import os

__all__ = ["HISTORY_FILE", "history_thread_id"]

HISTORY_FILE = ".aider.chat.history.md"
"""Aider's default ``--chat-history-file`` name, at the git root."""


def history_thread_id(path: str) -> str:
    """``<repository name>-<8 hex of sha256(its real path)>`` for a history file (pure)."""
    import hashlib  # noqa: PLC0415 - here: it loads OpenSSL, which a prompt hook never needs

    repo = os.path.dirname(os.path.realpath(path))
    digest = hashlib.sha256(repo.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{os.path.basename(repo) or 'root'}-{digest}"
