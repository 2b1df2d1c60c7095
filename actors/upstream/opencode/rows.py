"""OpenCode's rows as this release reads them: sessions, messages, parts (formats doc §4.1-§4.3).

The msgspec shapes of ``opencode.db``'s ``session``, ``message`` and
``part`` rows and their decoding; :mod:`actors.upstream.opencode.store` reads them,
:mod:`actors.upstream.opencode.classify` decides them. Pure; thread-safe.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from actors.upstream.common import Unit

__all__ = ["OpenCodeClassification", "OpenCodeMarker", "OpenCodeMessage", "OpenCodePart",
           "OpenCodeSession", "PartSource", "SourceText"]

_MEDIA_PDF: Final = "application/pdf"


# --- types -------------------------------------------------------------------


class SourceText(msgspec.Struct, frozen=True):
    """The span of the typed text a file part came from (``source.text``).

    Attributes:
        value: the text of the span, e.g. ``"@README.md"`` or ``"[Image 1]"``.
        start: start offset in UTF-16 code units (OpenCode is JavaScript).
        end: end offset (exclusive), UTF-16 code units.
    """

    value: str
    start: int
    end: int


class PartSource(msgspec.Struct, frozen=True, kw_only=True):
    """A part's ``source``; only the span matters here (formats doc §4.2).

    Attributes:
        text: the typed span for file/symbol/resource sources; ``None`` for an
            ``agent`` part, whose source is ``{value,start,end}`` directly.
    """

    text: SourceText | None = None


class OpenCodePart(msgspec.Struct, frozen=True, kw_only=True):
    """One message part, as stored in ``part.data`` (formats doc §4.2).

    Only the fields classification reads are decoded; the rest (tool state,
    data URLs, times) is skipped.

    Attributes:
        type: ``text``, ``file``, ``agent``, ``subtask``, ``compaction``,
            ``tool``, ``step-start``, …
        id: the part id (``prt_…``), from the row.
        text: a ``text`` part's text.
        synthetic: set on text OpenCode added (Read tool output, ACP
            ``audience:["assistant"]`` blocks, the shell sentinel).
        ignored: set on text hidden from the model (ACP ``audience:["user"]``).
        metadata: e.g. ``{"compaction_continue": true}``.
        mime: a ``file`` part's MIME type.
        filename: a ``file`` part's file name.
        source: where a ``file``/``agent`` part sits in the typed text.
    """

    type: str
    id: str = ""
    text: str | None = None
    synthetic: bool | None = None
    ignored: bool | None = None
    metadata: dict[str, Any] | None = None
    mime: str | None = None
    filename: str | None = None
    source: PartSource | None = None


class OpenCodeMessage(msgspec.Struct, frozen=True, kw_only=True):
    """One message of a session with its (decoded) parts.

    Attributes:
        id: the message id (``msg_…``).
        role: ``"user"`` or ``"assistant"``; ``None`` if ``data`` did not decode.
        created: ``data.time.created`` in epoch ms (the row's ``time_created``
            when absent).
        parts: the parts in id (creation) order; empty for assistant messages
            unless asked for, and for a user row whose parts have not landed.
        undecodable: ``data`` or one of the parts is not OpenCode's shape.
        failed: an assistant reply that the store proves failed or came back
            empty (``error`` set, or ``tokens.output`` of 0).
        model: a user message's ``model`` as ``providerID/modelID``, if stored.
    """

    id: str
    role: str | None
    created: int
    parts: tuple[OpenCodePart, ...] = ()
    undecodable: bool = False
    failed: bool = False
    model: str | None = None


class OpenCodeSession(msgspec.Struct, frozen=True, kw_only=True):
    """A ``session`` row (formats doc §4.1).

    Attributes:
        id: the session id (``ses_…``).
        parent_id: the parent session for a subagent child session, else ``None``.
        title: the session title (children end in ``(@<agent> subagent)``).
        version: the OpenCode version that created it, e.g. ``"1.18.33"``.
        directory: the project directory.
        time_created: epoch ms.
        time_updated: epoch ms.
        time_archived: epoch ms when archived, else ``None``.
        permission: the session's own permission ruleset (JSON text), or
            ``None`` (older stores have no such column).
    """

    id: str
    parent_id: str | None
    title: str
    version: str
    directory: str
    time_created: int
    time_updated: int
    time_archived: int | None = None
    permission: str | None = None

    @property
    def is_child(self) -> bool:
        """True for a subagent child session: its turns never count."""
        return self.parent_id is not None

    @property
    def is_program_driven(self) -> bool:
        """True for a session ``opencode run`` created (its prompts come from a program).

        Non-interactive ``opencode run`` (``packages/opencode/src/cli/cmd/run.ts``)
        creates its session with a ruleset that denies ``question``,
        ``plan_enter`` and ``plan_exit`` for every pattern: nobody is there to
        answer. A session a person drives never carries a ``question`` deny,
        so that rule marks the program. SDK and server clients that create
        sessions without it are not told apart (documented).
        """
        if not self.permission:
            return False
        try:
            rules = msgspec.json.decode(self.permission)
        except msgspec.DecodeError:
            return False
        return is_program_ruleset(rules)

    @property
    def refusal(self) -> str | None:
        """Why no turn of this session counts, or ``None``.

        ``child_session`` (a subagent's), ``program_session`` (``opencode run``).
        """
        if self.is_child:
            return "child_session"
        return "program_session" if self.is_program_driven else None


def is_program_ruleset(rules: object) -> bool:
    """Whether a session's ``permission`` ruleset (decoded JSON) is the one ``opencode run``
    gives the sessions it creates: ``question`` denied for every pattern.

    Written by every release read here: 1.18.33 (``run.ts``) and 1.1.65 (the
    npm binary's ``opencode run``: ``sdk.session.create({title, permission:
    rules})`` with ``question``, ``plan_enter`` and ``plan_exit`` denied), whose
    JSON store keeps the list in ``session/<project>/<id>.json``. Pure.
    """
    return isinstance(rules, list) and any(
        isinstance(rule, dict) and rule.get("permission") == "question"
        and rule.get("action") == "deny" and rule.get("pattern") == "*" for rule in rules)


class OpenCodeMarker(msgspec.Struct, frozen=True):
    """Where monitoring of one OpenCode session stands (anchor §3.17).

    Attributes:
        seq: the ``event_sequence.seq`` last seen.
        last_human_message_id: the newest direct-human message already
            consumed, or ``None``.
    """

    seq: int
    last_human_message_id: str | None


class OpenCodeClassification(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`classify_messages` decided.

    Attributes:
        decisions: ``(message_id, Unit)`` for every message, in (created, id)
            order.
        last_human_message_id: the marker's next ``last_human_message_id``.
    """

    decisions: tuple[tuple[str, Unit], ...]
    last_human_message_id: str | None

    @property
    def human(self) -> list[tuple[str, Unit]]:
        """The decisions counted as human turns, oldest first."""
        return [(mid, unit) for mid, unit in self.decisions if unit.human]


class _MessageTime(msgspec.Struct, frozen=True):
    created: int | None = None


class _MessageData(msgspec.Struct, frozen=True):
    role: str | None = None
    time: _MessageTime | None = None
    error: object = None  # any shape: only its presence is read
    tokens: object = None
    model: object = None


def _failed(data: _MessageData) -> bool:
    """An assistant reply the store proves failed (``error``) or empty (no output tokens)."""
    if data.role != "assistant":
        return False
    if data.error is not None:
        return True
    output = data.tokens.get("output") if isinstance(data.tokens, dict) else None
    return isinstance(output, int) and not isinstance(output, bool) and output == 0


def _model_of(data: _MessageData) -> str | None:
    model = data.model
    if data.role != "user" or not isinstance(model, dict):
        return None
    provider, name = model.get("providerID"), model.get("modelID")
    return f"{provider}/{name}" if isinstance(provider, str) and isinstance(name, str) else None


_message_decoder: Final = msgspec.json.Decoder(_MessageData)
_part_decoder: Final = msgspec.json.Decoder(OpenCodePart)
_SESSION_COLUMNS: Final = (
    "id", "parent_id", "title", "version", "directory",
    "time_created", "time_updated", "time_archived",
)
_OPTIONAL_SESSION_COLUMNS: Final = ("permission",)
"""Columns newer stores have; read when present."""


def _sort_key(message: OpenCodeMessage) -> tuple[int, str]:
    return (message.created, message.id)


def _decode_message(message_id: str, time_created: Any, data: Any) -> OpenCodeMessage:
    row_created = time_created if _is_int(time_created) else 0
    if not isinstance(data, str | bytes):
        return OpenCodeMessage(id=message_id, role=None, created=row_created, undecodable=True)
    try:
        decoded = _message_decoder.decode(data)
    except msgspec.DecodeError:
        return OpenCodeMessage(id=message_id, role=None, created=row_created, undecodable=True)
    created = decoded.time.created if decoded.time is not None else None
    if created is None:
        if not _is_int(time_created):
            return OpenCodeMessage(id=message_id, role=decoded.role, created=row_created,
                                   undecodable=True)
        created = row_created
    return OpenCodeMessage(id=message_id, role=decoded.role, created=created,
                           failed=_failed(decoded), model=_model_of(decoded))


def _decode_part(part_id: Any, data: Any) -> OpenCodePart | None:
    if not isinstance(part_id, str) or not isinstance(data, str | bytes):
        return None
    try:
        part = _part_decoder.decode(data)
    except msgspec.DecodeError:
        return None
    return msgspec.structs.replace(part, id=part_id)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
