"""Where a Gemini CLI session's side files are: its project's ``logs.json`` and root.

Standard library only (the light half, :mod:`actors.upstream.gemini.source`,
and the heavy half both use it). Pure apart from the one read named.
"""

from __future__ import annotations

import os

__all__ = ["logs_file", "project_root_of"]


def logs_file(path: str) -> str:
    """``<project temp dir>/logs.json`` of a session file (pure; see ``gemini.logs_path_for``)."""
    parent = os.path.dirname(path)
    chats = parent if os.path.basename(parent) == "chats" else os.path.dirname(parent)
    return os.path.join(os.path.dirname(chats), "logs.json")


def project_root_of(path: str) -> str | None:
    """The project root the ``.project_root`` file of a session's temp dir names, or ``None``.

    Caller's thread; one small read; never raises.
    """
    marker = os.path.join(os.path.dirname(logs_file(path)), ".project_root")
    try:
        with open(marker, encoding="utf-8") as file:
            root = file.read(4096).strip()
    except (OSError, ValueError):
        return None
    return root or None
