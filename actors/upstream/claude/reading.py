"""Claude Code's heavy half: its :class:`~actors.upstream.reading.Reading`, a line-based one.

Loaded on first use by :func:`actors.upstream.claude.source.reading`; built
from the line classifier :mod:`actors.upstream.claude.classify` (rows copied from an earlier
session: :mod:`actors.upstream.claude.copies`), the sample writer
:mod:`actors.upstream.claude.kit`. Building it reads nothing.
"""

from __future__ import annotations

from actors.upstream.claude.classify import classify_claude_line
from actors.upstream.claude.copies import claude_copy_classifier
from actors.upstream.claude.kit import sample, type_turn
from actors.upstream.claude.mode import program_driven_note
from actors.upstream.common import cwd_in
from actors.upstream.jsonl import line_reading
from actors.upstream.reading import Reading

__all__ = ["READING"]

READING: Reading = line_reading(classify_claude_line, classify_at=claude_copy_classifier,
                                project=cwd_in, sample=sample, type_turn=type_turn,
                                note=program_driven_note)
"""Claude Code's reading: no header decides; rows copied from an earlier session are not typed."""
