"""Where a Pi prompt came from, as our Pi extension records it (issue 22, class 4).

Pi 0.73.1 writes a prompt sent by ``pi -p`` (print mode), by an RPC client
(``pi --mode rpc``) or by an extension (``pi.sendUserMessage``) exactly as a
prompt typed into the TUI: the session file holds no input source. Pi hands
the source to extensions only (``InputEvent.source`` = ``"interactive"`` |
``"rpc"`` | ``"extension"``, ``dist/core/extensions/types.d.ts``; print mode
passes none, which Pi reports as ``"interactive"``, but runs without a UI:
``ExtensionContext.hasUI`` is false in print mode). So our extension
(``actors/agents/data/pi_extension.ts``, installed by ``ssa install pi``)
adds one field to each user message at ``message_end``, before Pi stores it
(``MessageEndEventResult.message`` replaces the finalized message, same
role; ``AgentSession._replaceMessageInPlace`` then persists it):

``"ssaInput": {"v": 1, "source": "interactive" | "rpc" | "extension" | null,
"ui": true | false}``

No text is recorded. Without our extension there is no such field and a
prompt stays decided as before (typed): such runs cannot be told apart.

Pure: no I/O, no logging, thread-safe; nothing raises.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["INPUT_FIELD", "input_source_reason"]

INPUT_FIELD = "ssaInput"
"""The user-message field our Pi extension writes."""

_SOURCE_REASONS = {"rpc": "rpc_input", "extension": "extension_input"}


def input_source_reason(record: object) -> str | None:
    """Why a user message our extension marked was not typed, or ``None`` (it may be).

    Args:
        record: the message's ``ssaInput`` value (any JSON value; ``None``
            when absent).

    Returns:
        ``"rpc_input"`` (sent through ``pi --mode rpc``), ``"extension_input"``
        (an extension's ``sendUserMessage``), ``"headless_input"`` (a run
        without a UI: ``pi -p``, an SDK program), else ``None``: no record, an
        unknown record version, or an interactive source with a UI. Unknown
        sources with a UI stay ``None`` (nothing proves a program).
    """
    if not isinstance(record, Mapping) or record.get("v") != 1:
        return None
    source = record.get("source")
    reason = _SOURCE_REASONS.get(source) if isinstance(source, str) else None
    if reason is not None:
        return reason
    if record.get("ui") is False:
        return "headless_input"
    return None
