"""Defaults shared by the command's parser (:mod:`actors.cli.app`) and ``ssa watch``."""

from __future__ import annotations

__all__ = ["DEFAULT_WATCHER"]

DEFAULT_WATCHER = "agent:main:main"
"""``ssa watch``'s default ``--watcher`` (the contract's)."""
