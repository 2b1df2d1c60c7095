"""Codex's heavy half: its :class:`~actors.upstream.reading.Reading`, a line-based one.

Loaded on first use by :func:`actors.upstream.codex.source.reading`; built
from the line classifier :mod:`actors.upstream.codex.classify` (the header:
:mod:`actors.upstream.codex.meta`; the turns ``codex queue`` started:
:mod:`actors.upstream.codex.turns`; the rows a legacy fork replayed:
:mod:`actors.upstream.codex.copies`), the sample writer
:mod:`actors.upstream.codex.kit`. Building it reads nothing.
"""

from __future__ import annotations

from actors.upstream.codex.classify import classify_codex_line, codex_header_verdict, codex_project
from actors.upstream.codex.copies import codex_copy_classifier
from actors.upstream.codex.kit import sample, type_turn
from actors.upstream.jsonl import line_reading
from actors.upstream.reading import Reading

__all__ = ["READING"]

READING: Reading = line_reading(classify_codex_line, classify_at=codex_copy_classifier,
                                header=codex_header_verdict, project=codex_project,
                                sample=sample, type_turn=type_turn)
"""Codex's reading: the ``session_meta`` line decides the thread and whether it is linked;
the message of a turn ``codex queue`` started (:mod:`actors.upstream.codex.turns`) is not
typed, nor a prompt a fork replayed from its parent (:mod:`actors.upstream.codex.copies`)."""
