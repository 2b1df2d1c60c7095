"""A throw-away home directory for a coding agent, and config-file helpers.

A :class:`Home` is a directory under the test's ``tmp_path`` used as
``HOME`` with the XDG base directories inside it, so nothing a tool writes
reaches the person's real home and two tools can share one home (a manager
and a worker) when a test gives both the same :class:`Home`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Home", "merge_json", "write_private"]


@dataclass(frozen=True)
class Home:
    """A throw-away ``HOME`` (``root``) with its XDG directories.

    Attributes:
        root: the directory used as ``HOME`` (mode 0700).
    """

    root: Path

    @classmethod
    def create(cls, root: Path) -> Home:
        """Create ``root`` and its XDG directories (0700); returns the home.

        Raises:
            OSError: the directories cannot be created.
        """
        home = cls(root)
        for path in (root, home.config, home.data, home.state, home.cache):
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return home

    @property
    def config(self) -> Path:
        """``$XDG_CONFIG_HOME`` (``<root>/.config``)."""
        return self.root / ".config"

    @property
    def data(self) -> Path:
        """``$XDG_DATA_HOME`` (``<root>/.local/share``)."""
        return self.root / ".local" / "share"

    @property
    def state(self) -> Path:
        """``$XDG_STATE_HOME`` (``<root>/.local/state``)."""
        return self.root / ".local" / "state"

    @property
    def cache(self) -> Path:
        """``$XDG_CACHE_HOME`` (``<root>/.cache``)."""
        return self.root / ".cache"

    def env(self) -> dict[str, str]:
        """``HOME``, the XDG variables, ``USER``, a UTF-8 locale and a 256-colour ``TERM``."""
        return {"HOME": str(self.root), "XDG_CONFIG_HOME": str(self.config),
                "XDG_DATA_HOME": str(self.data), "XDG_STATE_HOME": str(self.state),
                "XDG_CACHE_HOME": str(self.cache), "USER": os.environ.get("USER", "harness"),
                "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "xterm-256color",
                "COLORTERM": "truecolor", "SHELL": "/bin/bash"}


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (mode 0600), creating its parents (0700).

    Raises:
        OSError: the file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def merge_json(path: Path, values: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge ``values`` into the JSON object in ``path`` (created when missing).

    Nested objects merge key by key; any other value replaces the old one.
    Returns the merged object. Lets a test add its own keys (hooks, MCP
    servers) before or after the harness writes its own.

    Raises:
        ValueError: the file is not JSON.
        TypeError: it holds something other than a JSON object.
        OSError: it cannot be read or written.
    """
    current: Any = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    if not isinstance(current, dict):
        raise TypeError(f"{path} does not hold a JSON object")
    merged = _merge(current, values)
    write_private(path, json.dumps(merged, indent=2) + "\n")
    return merged


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out
