"""Readers and classifiers for adopted upstream sessions (Claude Code, Codex, OpenCode, Pi).

One module per source. Each classifies units of that tool's real on-disk
format conservatively: only turns a person typed count as human.
"""

from __future__ import annotations

from actors.upstream._common import Unit, normalize_text, text_hash

__all__ = ["Unit", "normalize_text", "text_hash"]
