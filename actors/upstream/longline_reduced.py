"""A long line's reduced copy, and the decision its classifier's unit becomes.

What lives here: :class:`ReducedLine` (what
:class:`~actors.upstream.longline.LineReducer` returns: the bounded copy,
whether it was pruned or oversized, the shortened strings' whole-text
hashes), the elision :data:`MARKER` in a shortened string, and
:func:`reduced_unit`: a pruned or oversized line is never typed, and a
typed unit whose text is one shortened string gets that string's
whole-text hash (self-echo). Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import msgspec

from actors.upstream.common import Unit

__all__ = ["MARKER", "ReducedLine", "reduced_unit"]

MARKER = "\ue000ssa-elided:{}\ue001"
"""Stands in a shortened string for its middle; ``{}`` is the index into ``elided``."""
_MARKER_RE = re.compile("\ue000ssa-elided:(\\d+)\ue001")


@dataclass(frozen=True, slots=True)
class ReducedLine:
    """What :meth:`~actors.upstream.longline.LineReducer.finish` returns.

    Attributes:
        line: the reduced copy (bytes, one JSON document or deliberately not).
        size: bytes of the original line.
        pruned: array elements, object members, deep containers or a long
            number's digits were dropped.
        oversized: the copy reached
            :data:`~actors.upstream.longline.REDUCED_MAX_BYTES`; later
            elements and members were dropped.
        elided: per elision marker index, ``(normalized shortened text,
            text_hash of the whole normalized text)``.
    """

    line: bytes
    size: int
    pruned: bool
    oversized: bool
    elided: tuple[tuple[str, str], ...]


# Decisions that read everything a content list holds: on a pruned copy they may be
# wrong (600 images and then a text block is not image-only), so they say so instead.
_WHOLE_CONTENT_REASONS = frozenset({"image_only", "no_text", "empty", "empty_text",
                                    "ide_context"})


def reduced_unit(unit: Unit, reduced: ReducedLine) -> Unit:
    """The decision on a line, given its classifier's ``unit`` for ``reduced.line``.

    A pruned or oversized line is never typed: a typed unit, or one whose
    reason depends on the whole content list (``image_only``, ``empty``…),
    becomes ``oversized_structure`` / ``oversized_line``; other reasons
    (``tool_result``, ``not_user``…) stand, since what they read was kept. A
    typed unit whose text is one shortened string carries that string's
    whole-text hash in ``echo_hash``. Pure; never raises.
    """
    if reduced.oversized or reduced.pruned:
        if unit.human or unit.reason in _WHOLE_CONTENT_REASONS:
            reason = "oversized_line" if reduced.oversized else "oversized_structure"
            return Unit(human=False, reason=reason, occurred_at=unit.occurred_at)
        return unit
    if not unit.human:
        return unit
    text = unit.text or ""
    match = _MARKER_RE.search(text)
    if match is None:
        return unit
    index = int(match.group(1))
    if index < len(reduced.elided) and reduced.elided[index][0] == text:
        return msgspec.structs.replace(unit, echo_hash=reduced.elided[index][1])
    return unit
