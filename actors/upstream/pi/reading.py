"""Pi's heavy half: its :class:`~actors.upstream.reading.Reading`, a line-based one.

Loaded on first use by :func:`actors.upstream.pi.source.reading`; built
from the line classifier :mod:`actors.upstream.pi.classify` (prompts a fork copied:
:mod:`actors.upstream.pi.copies`), the sample writer
:mod:`actors.upstream.pi.kit`. Building it reads nothing.
"""

from __future__ import annotations

from actors.upstream.jsonl import line_reading
from actors.upstream.pi.classify import classify_pi_line, pi_header_verdict, pi_project
from actors.upstream.pi.copies import pi_copy_classifier
from actors.upstream.pi.kit import sample, type_turn
from actors.upstream.reading import Reading

__all__ = ["READING"]

READING: Reading = line_reading(classify_pi_line, classify_at=pi_copy_classifier,
                                header=pi_header_verdict, project=pi_project,
                                sample=sample, type_turn=type_turn)
"""Pi's reading: session files of every format (v1-v3, by their header) are linked; the
prompts a forked session copied from its parent (:mod:`actors.upstream.pi.copies`) are not
typed."""
