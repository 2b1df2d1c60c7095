"""A Codex rollout's ``session_meta`` line: its thread, and whether it may be linked.

The first line of every rollout (formats doc §3.2) says which thread it is
and who started it; only threads a user started get an upstream link.
Pure (no I/O, no logging), thread-safe; nothing here raises.
"""

from __future__ import annotations

import msgspec

__all__ = ["CodexThread", "codex_header_verdict", "codex_link_refusal", "codex_project",
           "pre_envelope_thread",
           "read_codex_thread"]

_DECODE_ERRORS = (msgspec.DecodeError, RecursionError, ValueError, TypeError)


class CodexThread(msgspec.Struct, frozen=True, kw_only=True):
    """What a rollout's ``session_meta`` line says about its thread (formats doc §3.2).

    Attributes:
        thread_id: ``payload.id`` (falls back to ``payload.session_id``).
        originator: e.g. ``codex_cli_rs`` (old TUI), ``codex-tui``, ``codex_exec``.
        source: ``cli``, ``vscode``, ``exec``, ``mcp``, ``unknown``…; an
            object source is flattened to ``"<key>"`` or ``"<key>:<value>"``,
            e.g. ``{"subagent":"review"}`` → ``"subagent:review"``,
            ``{"subagent":{"thread_spawn":{…}}}`` → ``"subagent:thread_spawn"``.
            A present value of any other shape becomes ``"unrecognized"``.
            ``None`` when absent (<=0.3x).
        thread_source: ``user`` or ``subagent`` (newer builds), else ``None``.
        history_mode: ``legacy`` or ``paginated`` (newer builds), else ``None``.
        cli_version: the Codex version that wrote the line.
    """

    thread_id: str | None = None
    originator: str | None = None
    source: str | None = None
    thread_source: str | None = None
    history_mode: str | None = None
    cli_version: str | None = None


class _MetaPayload(msgspec.Struct):
    id: object = None
    session_id: object = None
    originator: object = None
    source: object = None
    thread_source: object = None
    history_mode: object = None
    cli_version: object = None


class _MetaLine(msgspec.Struct):
    type: object = None
    payload: _MetaPayload | None = None


_META = msgspec.json.Decoder(_MetaLine)


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _source_label(value: object) -> str | None:
    """Flatten ``session_meta.source`` to one string (see :class:`CodexThread`)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        key, inner = next(iter(value.items()))
        if isinstance(inner, str):
            return f"{key}:{inner}"
        if isinstance(inner, dict) and inner:
            return f"{key}:{next(iter(inner))}"
        return str(key)
    return "unrecognized"


def read_codex_thread(first_line: bytes) -> CodexThread | None:
    """Read the thread facts from a rollout's first line (formats doc §3.2).

    Args:
        first_line: the first JSONL line of the rollout (trailing newline allowed).

    Returns:
        A :class:`CodexThread` when the line is a ``session_meta`` row with an
        object payload; ``None`` for anything else (other row kinds, invalid
        JSON, wrong shapes). Fields of an unexpected type read as ``None``
        (``source`` as ``"unrecognized"``).

    Pure, thread-safe and non-raising.
    """
    try:
        row = _META.decode(first_line)
    except _DECODE_ERRORS:
        return None
    payload = row.payload
    if row.type != "session_meta" or payload is None:
        return None
    return CodexThread(
        thread_id=_opt_str(payload.id) or _opt_str(payload.session_id),
        originator=_opt_str(payload.originator),
        source=_source_label(payload.source),
        thread_source=_opt_str(payload.thread_source),
        history_mode=_opt_str(payload.history_mode),
        cli_version=_opt_str(payload.cli_version),
    )


# Codex's own resume picker lists only these sources as interactive
# (INTERACTIVE_SESSION_SOURCES in codex-rs/rollout/src/lib.rs). Custom sources
# may appear as {"custom": "atlas"} or as the bare inner string.
_INTERACTIVE_SOURCES = frozenset(
    {"cli", "vscode", "atlas", "chatgpt", "custom:atlas", "custom:chatgpt"}
)
_SOURCE_REFUSALS = {
    "exec": "exec_thread",
    "subagent": "subagent_thread",
    "mcp": "mcp_thread",
    "internal": "internal_thread",
}


def codex_link_refusal(thread: CodexThread | None) -> str | None:
    """Decide whether a Codex thread may be monitored: only threads a user started.

    Rules, in order (formats doc §3.2, §3.3 "Subagent threads" and
    "``codex exec``", §6 "Program-driven sessions"):

    1. no ``session_meta`` → ``"not_a_rollout"``;
    2. ``thread_source`` present and not ``"user"``: ``subagent`` →
       ``"subagent_thread"``, any other value → ``"not_user_thread"``;
    3. ``originator == "codex_exec"`` → ``"exec_thread"``. ``codex exec``
       threads say ``thread_source: "user"`` (fixture codex-0.135.0), so
       ``thread_source`` alone is not enough: the prompt came from a command
       line or script, not a person at a terminal;
    4. ``source`` absent (<=0.3x files, e.g. 0.34.0): the TUI → allowed;
    5. ``source`` in Codex's interactive set (``cli``, ``vscode``, custom
       ``atlas`` / ``chatgpt``) → allowed;
    6. any other ``source`` is program-driven or unknown and refused:
       ``exec`` → ``"exec_thread"``, ``subagent…`` → ``"subagent_thread"``,
       ``mcp`` → ``"mcp_thread"``, ``internal…`` → ``"internal_thread"``,
       else (``unknown``, other custom, unrecognized) →
       ``"non_interactive_source"``.

    Args:
        thread: the result of :func:`read_codex_thread`, or ``None``.

    Returns:
        ``None`` when the thread may be monitored, else a short snake_case reason.

    Pure and thread-safe.
    """
    if thread is None:
        return "not_a_rollout"
    if thread.thread_source is not None and thread.thread_source != "user":
        return "subagent_thread" if thread.thread_source == "subagent" else "not_user_thread"
    if thread.originator == "codex_exec":
        return "exec_thread"
    source = thread.source
    if source is None or source in _INTERACTIVE_SOURCES:
        return None
    return _SOURCE_REFUSALS.get(source.split(":", 1)[0], "non_interactive_source")


class _BareMeta(msgspec.Struct):
    type: object = None
    payload: object = None
    id: object = None
    timestamp: object = None


_BARE_META = msgspec.json.Decoder(_BareMeta)


def pre_envelope_thread(first_line: bytes) -> str | None:
    """The thread id of a rollout Codex wrote before its line envelope, else ``None``.

    Until openai/codex PR #3380 (merged 2025-09-09, before 0.34.0) a rollout's
    first line was a bare ``SessionMeta`` (``{"id", "timestamp",
    "instructions"}``, ``codex-rs/core/src/rollout.rs`` at ``89a151f5``) and
    every later line a bare ``ResponseItem`` or a ``{"record_type": "state"}``
    line: no ``type``/``payload`` envelope, no ``event_msg``, no
    ``originator`` or ``source``. Pure; never raises.
    """
    try:
        bare = _BARE_META.decode(first_line)
    except _DECODE_ERRORS:
        return None
    if bare.type is not None or bare.payload is not None:
        return None
    if isinstance(bare.id, str) and bare.id and isinstance(bare.timestamp, str):
        return bare.id
    return None


def codex_header_verdict(first_line: bytes) -> tuple[str | None, str | None]:
    """``(thread id or None, refusal or None)`` from a rollout's ``session_meta`` line.

    A rollout from before Codex's line envelope (:func:`pre_envelope_thread`)
    is refused ``legacy_rollout_format``: nothing in it tells a ``codex exec``
    run from a person at the TUI, and its only user turns are user-role
    response items, which also carry the injected context (AGENTS.md,
    ``<environment_context>``) with no event to tell a typed prompt from it.
    Pure; never raises (see :func:`read_codex_thread`, :func:`codex_link_refusal`).
    """
    thread = read_codex_thread(first_line)
    if thread is None:
        legacy = pre_envelope_thread(first_line)
        if legacy is not None:
            return legacy, "legacy_rollout_format"
    found = thread.thread_id if thread is not None and thread.thread_id else None
    return found, codex_link_refusal(thread)


class _Cwd(msgspec.Struct):
    cwd: str | None = None


class _CwdMeta(msgspec.Struct):
    type: str | None = None
    payload: _Cwd | None = None


_cwd_meta = msgspec.json.Decoder(_CwdMeta)


def codex_project(lines: list[bytes]) -> str | None:
    """``session_meta.payload.cwd`` of a rollout's first line (its head ``lines``), or ``None``.

    Pure; never raises.
    """
    for line in lines[:1]:
        try:
            meta = _cwd_meta.decode(line)
        except (msgspec.MsgspecError, RecursionError):
            continue
        if meta.payload is not None and meta.payload.cwd:
            return meta.payload.cwd
    return None
