"""Pi entries of a kind this release does not know: logged once per process.

:func:`~actors.upstream.pi.classify.classify_pi_line` decides an entry whose
``type`` it does not know ``not_message``, and a ``message`` whose role it does
not know ``not_user``: never typed. :func:`logging_unknown` wraps a line
classifier so that such a kind is also logged once per process, its name
only (``type`` or ``role:<role>``; :func:`~actors.upstream.kindlog.log_unknown_kind`).
Every entry type and message role of pi-mono ``83378aad``
(``session-manager.ts``, ``messages.ts``) and the v1/v2 ones (``hookMessage``)
are known.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import msgspec

from actors.upstream.common import Unit
from actors.upstream.kindlog import log_unknown_kind

__all__ = ["logging_unknown"]

logger = logging.getLogger("actors.upstream.pi.classify")


class _Role(msgspec.Struct):
    role: object = None


class _Kind(msgspec.Struct):
    type: object = None
    message: _Role | None = None


_KIND = msgspec.json.Decoder(_Kind)


def _kind_name(line: bytes) -> object:
    try:
        entry = _KIND.decode(line)
    except (msgspec.MsgspecError, RecursionError):
        return None
    if entry.type == "message":
        role = entry.message.role if entry.message is not None else None
        return f"role:{role}" if isinstance(role, str) else None
    return entry.type


def logging_unknown(classify: Callable[[bytes], Unit]) -> Callable[[bytes], Unit]:
    """``classify``, logging an entry type or message role it does not know once per process.

    Entries without a type or role (not Pi's shape at all) are not logged. The
    returned callable runs in the caller's thread and never raises; it logs no text.
    """

    def classify_and_log(line: bytes) -> Unit:
        unit = classify(line)
        if unit.reason in ("not_message", "not_user"):
            kind = _kind_name(line)
            if isinstance(kind, str):
                log_unknown_kind(logger, "Pi", kind)
        return unit

    return classify_and_log
