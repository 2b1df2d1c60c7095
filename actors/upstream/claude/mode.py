"""Whether a Claude Code transcript is a session a program prompts (``claude -p``, the SDK).

Such a session is linked (a manager that spawned it may want its other
changes) but its turns are never a person's: every ``user`` row carries an
``entrypoint`` starting with ``sdk-`` (``sdk-cli`` for ``claude -p``), which
:mod:`actors.upstream.claude.classify` decides ``sdk_entrypoint``. ``ssa list``
says so instead of leaving a person to wonder why nothing counts. Pure.
"""

from __future__ import annotations

from actors.upstream.common import decode_object

__all__ = ["PROGRAM_DRIVEN", "program_driven_note"]

PROGRAM_DRIVEN = "program_driven"
"""The note of a session a program prompts (``claude -p``, the Agent SDK)."""


def program_driven_note(head: list[bytes]) -> str | None:
    """:data:`PROGRAM_DRIVEN` when the first ``user`` row among ``head`` (a transcript's
    first complete lines) came through an SDK entry point; ``None`` otherwise (no such
    row yet, or a terminal, IDE or desktop session). Pure; never raises."""
    for line in head:
        kind, row = decode_object(line)
        if kind != "ok" or row is None or row.get("type") != "user":
            continue
        entrypoint = row.get("entrypoint")
        return (PROGRAM_DRIVEN if isinstance(entrypoint, str) and entrypoint.startswith("sdk-")
                else None)
    return None
