"""Session keys: parsing and validation (pure functions, no I/O).

The key scheme comes from ``api-contract.md`` ("Session keys"): an
agent-qualified key is ``agent:<agentId>:<rest>`` with at least three
non-empty colon-separated parts; the bare ``global`` key of
``scope="global"`` has an agent id but is not agent-qualified.

Every function here is pure, thread-safe and non-blocking.
"""

from __future__ import annotations

import unicodedata

__all__ = [
    "DEFAULT_AGENT_ID",
    "MAX_KEY_BYTES",
    "MAX_KEY_LENGTH",
    "agent_id_of",
    "is_agent_qualified",
    "is_group_key",
    "is_subagent_key",
    "key_problem",
    "main_session_key",
]

DEFAULT_AGENT_ID = "main"
"""Agent id used for keys that name no agent (the bare ``global`` key)."""

MAX_KEY_LENGTH = 512
"""Longest accepted session key or agent id, in characters (contract)."""
MAX_KEY_BYTES = 768
"""Longest accepted session key or agent id, in bytes of UTF-8: three keys
(a cursor's) must fit one PostgreSQL index entry (2,704 bytes), and both
backends accept the same keys. Every ASCII key within 512 characters fits."""

# Characters that could pass for the notice's own double quotes (Unicode
# Quotation_Mark property, double and low/high forms), '"' itself, and "\\".
_QUOTE_LOOKALIKES = frozenset(
    '"\\\u00ab\u00bb\u02ba\u02dd\u02ee\u201c\u201d\u201e\u201f\u2033\u2036'
    "\u275d\u275e\u2e42\u301d\u301e\u301f\uff02"
    "\u05f4\u3003\u02f6\u1cd3\u2760\U0001f676\U0001f677\U0001f678\u00a8"
)
# Characters that render as nothing or as a blank, so two keys could look the same.
_INVISIBLE = frozenset("\u115f\u1160\u2800\u3164\uffa0") | frozenset(
    chr(c) for c in range(0xFE00, 0xFE10))


def key_problem(key: object, *, what: str = "session key") -> str | None:
    """Say why ``key`` is not an acceptable session key, or return ``None``.

    Args:
        key: the candidate value.
        what: the argument name used in the message.

    Returns:
        ``None`` when ``key`` is a non-empty ``str`` of at most
        :data:`MAX_KEY_LENGTH` characters and :data:`MAX_KEY_BYTES` bytes
        of UTF-8; otherwise a one-line reason naming
        ``what``. Refused: control, format (bidirectional marks, zero-width
        characters, BOM), surrogate, private-use and unassigned characters;
        line and paragraph separators and every space but U+0020; double
        quotes, their look-alikes, and backslashes; invisible fillers and
        variation selectors; combining marks not on a letter or digit. The key is quoted inside
        the notice text, which must stay one line that a key can neither
        forge nor reorder (issue 5, security).
    """
    if not isinstance(key, str):
        return f"{what} must be a str, not {type(key).__name__}"
    if not key:
        return f"{what} must not be empty"
    if len(key) > MAX_KEY_LENGTH:
        return f"{what} is longer than {MAX_KEY_LENGTH} characters"
    if key.isascii() and key.isprintable() and '"' not in key and "\\" not in key:
        return None  # the common case, exactly: ASCII holds no other refused character
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        return f"{what} is longer than {MAX_KEY_BYTES} bytes in UTF-8"
    previous = ""
    for ch in key:
        if ch in _QUOTE_LOOKALIKES or ch in _INVISIBLE:
            return f"{what} contains the forbidden character U+{ord(ch):04X}"
        category = unicodedata.category(ch)
        if category[0] == "M" and (not previous or unicodedata.category(previous)[0] in "PZS"):
            return f"{what} has a combining mark U+{ord(ch):04X} that is not on a letter"
        previous = ch
        if category[0] == "C":
            return f"{what} contains the control or format character U+{ord(ch):04X}"
        if category[0] == "Z" and ch != " ":
            return f"{what} contains the separator character U+{ord(ch):04X}"
    return None


def is_agent_qualified(key: str) -> bool:
    """Whether ``key`` is ``agent:<agentId>:<rest>`` with non-empty parts.

    Only agent-qualified keys can be watchers (seed, "Watchers").
    """
    parts = key.split(":")
    return len(parts) >= 3 and parts[0] == "agent" and all(parts)


def agent_id_of(key: str) -> str:
    """Return the agent id named by ``key``, or :data:`DEFAULT_AGENT_ID`."""
    if is_agent_qualified(key):
        return key.split(":", 2)[1]
    return DEFAULT_AGENT_ID


def is_subagent_key(key: str) -> bool:
    """Whether ``key`` is a nested sub-agent session (rest starts ``subagent:``)."""
    return is_agent_qualified(key) and key.split(":", 2)[2].startswith("subagent:")


def is_group_key(key: str, chat_type: str | None = None) -> bool:
    """Whether ``key`` names a group or channel session (contract, anchor §3.12).

    Args:
        key: the session key.
        chat_type: the session entry's chat type, if known.

    Returns:
        ``True`` for ``chat_type`` ``"group"``/``"channel"`` or a key containing
        ``:group:`` or ``:channel:``; ``False`` for the bare ``global`` key.
    """
    if key == "global":
        return False
    if chat_type in ("group", "channel"):
        return True
    return ":group:" in key or ":channel:" in key


def main_session_key(agent_id: str) -> str:
    """Return the agent's main session key, ``agent:<agentId>:main``."""
    return f"agent:{agent_id}:main"
