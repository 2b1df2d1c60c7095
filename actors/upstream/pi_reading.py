"""Pi's heavy half: its :class:`~actors.upstream.reading.Reading`, a line-based one.

Loaded on first use by :func:`actors.upstream.pi_source.reading`; built
from the line classifier :mod:`actors.upstream.pi` (prompts a fork copied:
:mod:`actors.upstream.pi_copies`), the sample writer
:mod:`actors.upstream.kit.pi`. Building it reads nothing.
"""

from __future__ import annotations

from actors.upstream.jsonl import line_reading
from actors.upstream.kit.pi import sample, type_turn
from actors.upstream.pi import classify_pi_line, pi_header_verdict, pi_project
from actors.upstream.pi_copies import pi_copy_classifier
from actors.upstream.reading import Reading

__all__ = ["READING"]

READING: Reading = line_reading(classify_pi_line, classify_at=pi_copy_classifier,
                                header=pi_header_verdict, project=pi_project,
                                sample=sample, type_turn=type_turn)
"""Pi's reading: only v3 session files (by their header) are linked; the prompts a
forked session copied from its parent (:mod:`actors.upstream.pi_copies`) are not typed."""
