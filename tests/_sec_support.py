"""Shared helpers of the bad-input, privacy and security suites (issue 5, items 4, 6 and 7).

* an oracle that says, from the documented rules alone, whether an argument
  must be accepted, must be rejected (and with which ``actors.errors`` class),
  or may go either way;
* hypothesis strategies for hostile values (lone surrogates, NUL, RTL and
  other format characters, 1 MB strings, emoji, combining marks, SQL);
* a strict, type-aware equality for payloads;
* the database invariant check run after every property.

Pure functions; :func:`check_database` opens its own read-only connection.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import apsw
from hypothesis import strategies as st

from actors.errors import (
    ArgumentTypeError,
    InvalidArgument,
    InvalidChangesSince,
    InvalidSessionKey,
)
from persistence._backend import is_url, open_backend

INT64_MAX = 2**63 - 1
DAY_MS = 24 * 60 * 60 * 1000
MAX_KEY_LENGTH = 512
MAX_KEY_BYTES = 768  # of UTF-8 (three keys fit one PostgreSQL index entry)
MAX_DEDUPE_KEY_BYTES = 1000
MAX_TEXT_LENGTH = 1000
MAX_PAYLOAD_BYTES = 16 * 1024
KINDS = ("human_direct_message", "upstream_missing", "goal_changed", "child_spawned",
         "run_completed", "run_failed", "compacted", "adopted")
ACTOR_TYPES = ("human", "agent", "system")
OUTCOMES = ("ok", "error", "timeout", "cancelled")
FAILED_OUTCOMES = ("error", "timeout", "cancelled")

# The documented refusals: '"', '\\' and the double-quote look-alikes docs/api-overview.md promises
# to refuse (the Quotation_Mark double forms and the dingbat ornaments).
DOUBLE_QUOTES = frozenset(
    '"\\\u00ab\u00bb\u02ba\u02dd\u02ee\u201c\u201d\u201e\u201f\u2033\u2036'
    "\u275d\u275e\u2e42\u301d\u301e\u301f\uff02\u00a8")
# Blank-looking fillers and variation selectors (docs/api-overview.md: "invisible fillers").
INVISIBLE = frozenset("\u115f\u1160\u2800\u3164\uffa0") | frozenset(
    chr(c) for c in range(0xFE00, 0xFE10))
# Further characters Unicode's confusables data maps to '"' (or that are the missing
# members of the ornament families above). Whether they are refused is tested by the
# security suite; the bad-input oracle lets them go either way.
FURTHER_LOOKALIKES = {
    "\u05f4": "HEBREW PUNCTUATION GERSHAYIM (confusable with U+0022)",
    "\u3003": "DITTO MARK (confusable with U+0022)",
    "\u02f6": "MODIFIER LETTER MIDDLE DOUBLE ACUTE ACCENT (confusable with U+0022)",
    "\u1cd3": "VEDIC SIGN NIHSHVASA (confusable with U+0022)",
    "\u2760": "HEAVY LOW DOUBLE COMMA QUOTATION MARK ORNAMENT (U+275D/U+275E are refused)",
    "\U0001f676": "SANS-SERIF HEAVY DOUBLE TURNED COMMA QUOTATION MARK ORNAMENT",
    "\U0001f677": "SANS-SERIF HEAVY DOUBLE COMMA QUOTATION MARK ORNAMENT",
    "\U0001f678": "SANS-SERIF HEAVY LOW DOUBLE COMMA QUOTATION MARK ORNAMENT",
}

NOTICE_RE = re.compile(
    r'Session "(?P<key>[^"]*)" changed \(other actor\)\. Reconcile before acting: '
    r'session_status sessionKey "(?P=key)" changesSince (?P<since>0|[1-9][0-9]*)\.')


# --- the oracle --------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What a call must do: succeed, fail with one of ``errors``, or either."""

    must_fail: bool = False
    may_fail: bool = False
    errors: frozenset[type[Exception]] = frozenset()
    names: frozenset[str] = frozenset()

    def __and__(self, other: Verdict) -> Verdict:
        if self.must_fail and not other.must_fail:
            return self
        if other.must_fail and not self.must_fail:
            return other
        return Verdict(must_fail=self.must_fail or other.must_fail,
                       may_fail=self.may_fail or other.may_fail,
                       errors=self.errors | other.errors, names=self.names | other.names)


OK = Verdict()


def bad(error: type[Exception], name: str) -> Verdict:
    return Verdict(must_fail=True, errors=frozenset({error}), names=frozenset({name}))


def maybe(error: type[Exception], name: str) -> Verdict:
    return Verdict(may_fail=True, errors=frozenset({error}), names=frozenset({name}))


def all_of(verdicts: Iterable[Verdict]) -> Verdict:
    result = OK
    for verdict in verdicts:
        result = result & verdict
    return result


def key_verdict(value: object, name: str, *, optional: bool = False,
                agent: bool = False) -> Verdict:
    """The documented session-key (or agent id) rules, written independently of the library."""
    if value is None and optional:
        return OK
    if not isinstance(value, str):
        return bad(ArgumentTypeError, name)
    if (not value or len(value) > MAX_KEY_LENGTH
            or len(value.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES):
        return bad(InvalidSessionKey, name)
    ambiguous = False
    previous = ""
    for ch in value:
        category = unicodedata.category(ch)
        if (ch in DOUBLE_QUOTES or ch in INVISIBLE or category[0] == "C"
                or (category[0] == "Z" and ch != " ")):
            return bad(InvalidSessionKey, name)
        if category[0] == "M" and (not previous
                                   or unicodedata.category(previous)[0] in "PZS"):
            return bad(InvalidSessionKey, name)  # a mark on no letter (a look-alike builder)
        ambiguous = ambiguous or ch in FURTHER_LOOKALIKES
        previous = ch
    if agent and ":" in value:
        return bad(InvalidSessionKey, name)
    return maybe(InvalidSessionKey, name) if ambiguous else OK


def text_verdict(value: object, name: str, *, optional: bool = False,
                 max_length: int = MAX_TEXT_LENGTH, max_bytes: int | None = None) -> Verdict:
    """A storable identifier or summary: a non-empty ``str`` without NUL or lone surrogates."""
    if value is None and optional:
        return OK
    if not isinstance(value, str):
        return bad(ArgumentTypeError, name)
    if not value or len(value) > max_length or "\x00" in value or has_surrogate(value):
        return bad(InvalidArgument, name)
    if max_bytes is not None and len(value.encode("utf-8")) > max_bytes:
        return bad(InvalidArgument, name)
    return OK


def choice_verdict(value: object, name: str, allowed: Iterable[str],
                   error: type[Exception]) -> Verdict:
    """One of a closed set of strings; any other type is a type error (or a value error)."""
    if not isinstance(value, str):
        return Verdict(must_fail=True, errors=frozenset({ArgumentTypeError, error}),
                       names=frozenset({name}))
    return OK if value in set(allowed) else bad(error, name)


def int_verdict(value: object, name: str, *, optional: bool = True) -> Verdict:
    if value is None and optional:
        return OK
    if not isinstance(value, int) or isinstance(value, bool):
        return bad(ArgumentTypeError, name)
    return OK if -INT64_MAX <= value <= INT64_MAX else bad(InvalidArgument, name)


def changes_since_verdict(value: object) -> Verdict:
    if value is None:
        return OK
    if not isinstance(value, int) or isinstance(value, bool):
        return bad(ArgumentTypeError, "changes_since")
    return bad(InvalidChangesSince, "changes_since") if value < 0 else OK


def has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def payload_verdict(value: object) -> Verdict:
    """The documented payload rules: a JSON-typed ``dict`` of at most 16 KiB encoded."""
    if value is None:
        return OK
    if not isinstance(value, dict):
        return bad(ArgumentTypeError, "payload")
    errors: set[type[Exception]] = set()
    size = _walk(value, 1, errors)
    if errors:
        return Verdict(must_fail=True, errors=frozenset(errors), names=frozenset({"payload"}))
    if size > MAX_PAYLOAD_BYTES * 5 // 4:
        return bad(InvalidArgument, "payload")
    if size > MAX_PAYLOAD_BYTES * 3 // 4:
        return maybe(InvalidArgument, "payload")  # near the limit: encodings differ a little
    return OK


_ESCAPED = re.compile(r'[\x00-\x1f"\\]')


def _walk(value: object, depth: int, errors: set[type[Exception]]) -> int:
    """Collect the payload's problems; return a rough encoded size in bytes."""
    if depth > 40:
        errors.add(InvalidArgument)  # "nested deeper than 32 levels"
        return 0
    if value is None or isinstance(value, bool):
        return 5
    if isinstance(value, str):
        if has_surrogate(value):
            errors.add(InvalidArgument)
        escapes = len(_ESCAPED.findall(value))
        return len(value.encode("utf-8", "surrogatepass")) + 5 * escapes + 2
    if isinstance(value, int):
        if not -INT64_MAX <= value <= INT64_MAX:
            errors.add(InvalidArgument)
        return len(str(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            errors.add(InvalidArgument)
        return 24
    if isinstance(value, list):
        return 2 + sum(_walk(item, depth + 1, errors) + 1 for item in value)
    if isinstance(value, dict):
        size = 2
        for key, item in value.items():
            if not isinstance(key, str):
                errors.add(ArgumentTypeError)
                continue
            size += _walk(key, depth + 1, errors) + 1 + _walk(item, depth + 1, errors)
        return size
    errors.add(ArgumentTypeError)
    return 0


def features(value: object) -> set[str]:
    """Which hostile kinds of character a stored string held (for the tried-case report)."""
    if not isinstance(value, str):
        return set()
    found = set()
    for ch in value:
        category = unicodedata.category(ch)
        if ch == "\x00":
            found.add("NUL")
        elif category == "Cf":
            found.add("format/bidi")
        elif category == "Cc":
            found.add("control")
        elif category[0] == "M":
            found.add("combining")
        elif ord(ch) > 0xFFFF:
            found.add("astral/emoji")
        elif ch in "'%_;-":
            found.add("SQL punctuation")
    return found


def agent_of(key: str) -> str:
    """The contract's key scheme: ``agent:<agentId>:<rest>`` names its agent, else ``main``."""
    parts = key.split(":")
    if len(parts) >= 3 and parts[0] == "agent" and all(parts):
        return parts[1]
    return "main"


def is_qualified(key: str) -> bool:
    parts = key.split(":")
    return len(parts) >= 3 and parts[0] == "agent" and all(parts)


def clamp(occurred_at: int | None, now: int) -> int:
    return now if occurred_at is None else min(max(occurred_at, now - DAY_MS), now)


def attempt(verdict: Verdict, call: Callable[[], Any], what: str) -> tuple[bool, Any]:
    """Run ``call``; check it against ``verdict``. Returns ``(accepted, result)``."""
    try:
        result = call()
    except Exception as exc:  # judged below, outside the handler
        error: Exception = exc
    else:
        assert not verdict.must_fail, (
            f"{what}: accepted, expected {sorted(e.__name__ for e in verdict.errors)} "
            f"for {sorted(verdict.names)}")
        return True, result
    kind = f"{type(error).__module__}.{type(error).__name__}"
    assert verdict.must_fail or verdict.may_fail, f"{what}: valid input raised {kind}: {error}"
    assert isinstance(error, tuple(verdict.errors)), (
        f"{what}: raised {kind}: {error!s:.200}; "
        f"expected one of {sorted(e.__name__ for e in verdict.errors)}")
    assert any(name in str(error) for name in verdict.names), (
        f"{what}: the message {error!s:.200} names none of {sorted(verdict.names)}")
    return False, None


def same(a: object, b: object) -> bool:
    """Exact, type-aware equality (``1 != 1.0 != True``, ``0.0 != -0.0``, key order counts)."""
    if (isinstance(a, int) and isinstance(b, int)
            and not isinstance(a, bool) and not isinstance(b, bool)):
        return int(a) == int(b)  # an int subclass is stored as its value
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        assert isinstance(b, float)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


# --- strategies --------------------------------------------------------------

MEGA_ASCII = "m" * 1_000_000
MEGA_EMOJI = "\U0001f600" * 250_000
MEGA_COMBINING = "e\u0301" * 500_000
MEGA_SURROGATE = "s" * 999_999 + "\udc80"
SQL_TEXTS = (
    "'); DROP TABLE session_state_events; --",
    '" OR 1=1 --',
    "' OR '1'='1",
    "x'; DELETE FROM sessions; --",
    "1; UPDATE session_watch_cursors SET last_seen_sequence = 99; --",
    "%", "_", "*", "?", "?1", ":name", "@p", "$v",
)
SPECIAL_TEXTS: tuple[str, ...] = (
    "", " ", "  ", "\x00", "a\x00b", "\x00" * 3, "\u200f", "\u200e", "\u202e", "\u2066",
    "\u2069", "\ufeff", "\u200b", "\u200d", "\u2028", "\u2029", "\x85", "\n", "\r\n", "\t",
    "\x1b[31m", "\ud800", "\udfff", "a\ud83d", "\ud83d\ude00", "\U0001f600",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467", "e\u0301", "\u0301", "Z\u0324\u0354\u0367a",
    "\u05e9\u05dc\u05d5\u05dd", "\u0645\u0631\u062d\u0628\u0627", "'", '"', "\\", "\u201c",
    "\u2033", "''", "\u00a0", "\u3000", "\uffff", "\ue000", "\U0010ffff", "\U000e0001",
    "agent:main:main", "agent:main", "agent::x", "global", "agent:ops:main", ":", "::",
    "x" * 64, "x" * 65, "x" * 512, "x" * 513, "\U0001f600" * 512, "\U0001f600" * 513,
    "x" * 1000, "x" * 1001, "x" * 8192, "x" * 8193, MEGA_ASCII, MEGA_EMOJI, MEGA_COMBINING,
    MEGA_SURROGATE, *SQL_TEXTS,
)
ANY_CHAR = st.characters(exclude_categories=())  # surrogates, controls, unassigned too
SAFE_KEY_CHAR = st.one_of(
    st.characters(exclude_categories=("C", "Z"),
                  exclude_characters="".join(DOUBLE_QUOTES) + "".join(FURTHER_LOOKALIKES)),
    st.just(" "))
STORABLE_CHAR = st.characters(exclude_categories=("Cs",),  # type: ignore[arg-type]
                              exclude_characters="\x00")  # neither backend stores NUL


class Opaque:
    """An object of no JSON or string type."""

    def __repr__(self) -> str:
        return "Opaque()"


class MyInt(int):
    """An ``int`` subclass (accepted wherever an ``int`` is)."""


NON_STR: tuple[object, ...] = (
    None, 0, 7, -1, 1.5, float("nan"), True, False, b"agent:main:x", bytearray(b"x"),
    ("agent:main:x",), ["agent:main:x"], {"k": "v"}, frozenset({"a"}), Decimal("1"), Opaque(),
)
NON_STR_HASHABLE = tuple(v for v in NON_STR if getattr(type(v), "__hash__", None) is not None)


def texts(max_size: int = 24) -> st.SearchStrategy[str]:
    """Hostile strings of every kind."""
    return st.one_of(
        st.sampled_from(SPECIAL_TEXTS),
        st.text(ANY_CHAR, max_size=max_size),
        st.builds(lambda a, b, c: a + b + c, st.text(ANY_CHAR, max_size=4),
                  st.sampled_from(SPECIAL_TEXTS[:60]), st.text(ANY_CHAR, max_size=4)),
    )


def storable_texts(max_size: int = 40) -> st.SearchStrategy[str]:
    """Strings every text argument must accept (non-empty, no NUL, no lone surrogates)."""
    special = [t for t in SPECIAL_TEXTS if 0 < len(t) <= min(max_size, 64) // 2
               and "\x00" not in t and not has_surrogate(t)]
    return st.one_of(
        st.text(STORABLE_CHAR, min_size=1, max_size=max_size),
        st.sampled_from(special),
        st.builds(lambda a, b, c: (a + b + c)[:max_size], st.text(STORABLE_CHAR, max_size=4),
                  st.sampled_from(special), st.text(STORABLE_CHAR, max_size=4)),
    )


valid_keys = st.builds(
    lambda prefix, rest: prefix + rest,
    st.sampled_from(["agent:main:", "agent:ops:", "agent:main:subagent:",
                     "agent:main:telegram:group:", "agent:x y:", ""]),
    st.text(SAFE_KEY_CHAR, min_size=1, max_size=24),
)

key_like = st.one_of(valid_keys, texts(), st.sampled_from(NON_STR))
"""Anything a caller might pass as a session key."""

agent_ids = st.one_of(st.none(), st.sampled_from(["main", "ops", "x y", "\u00e9quipe"]))
bad_agent_ids = st.one_of(key_like, st.sampled_from(["a:b", ":", "agent:main:main", ""]))

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**64), 2**64),
    st.integers(-INT64_MAX, INT64_MAX), st.floats(),
    st.sampled_from([0.0, -0.0, 5e-324, 1e308, -1e-7, 1.0, 2.0**53 + 2]),
    st.text(ANY_CHAR, max_size=12), st.sampled_from(SPECIAL_TEXTS[:70]),
)
json_keys = st.one_of(st.text(ANY_CHAR, max_size=8), st.sampled_from(SPECIAL_TEXTS[:70]))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(json_keys, inner, max_size=4)),
    max_leaves=12)
storable_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-INT64_MAX, INT64_MAX),
    st.floats(allow_nan=False, allow_infinity=False), st.text(STORABLE_CHAR, max_size=12))
storable_values = st.recursive(
    storable_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(STORABLE_CHAR, max_size=8), inner,
                                            max_size=4)),
    max_leaves=12)
good_payloads = st.one_of(
    st.none(), st.dictionaries(st.text(STORABLE_CHAR, max_size=8), storable_values, max_size=5))


def _nested(depth: int, leaf: object = 1) -> Any:
    value: Any = leaf
    for _ in range(depth):
        value = {"d": value}
    return value


def _nested_list(depth: int) -> dict[str, Any]:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return {"l": value}


SPECIAL_PAYLOADS: tuple[object, ...] = (
    {}, {"": ""}, {"outcome": "error"}, {"a": 2**63 - 1}, {"a": -(2**63 - 1)}, {"a": 2**63},
    {"a": -(2**63)}, {"a": float("inf")}, {"a": float("-inf")}, {"a": float("nan")},
    {"a": (1, 2)}, {"a": {1, 2}}, {"a": b"x"}, {"a": Opaque()}, {"a": Decimal("1.5")},
    {1: "x"}, {None: 1}, {("t",): 1}, {"a": MEGA_ASCII}, {MEGA_ASCII: 1}, {"a": "\ud800"},
    {"\udfff": 1}, {"a": "x\x00y"}, {"a": "x" * 8_000}, {"a": "x" * 16_000}, {"a": "x" * 30_000},
    _nested(10), _nested(20), _nested(60), _nested(500), _nested_list(60),
    _nested_list(500), {"a": [MyInt(3)]}, {"a": {"b": [{"c": [None, True, -0.0]}]}},
    {"sql": "'); DROP TABLE session_state_heads; --"},
)
any_payloads = st.one_of(good_payloads, st.dictionaries(json_keys, json_values, max_size=5),
                         st.sampled_from(SPECIAL_PAYLOADS),
                         st.sampled_from((*NON_STR, [("a", 1)], "{}", '{"a": 1}')))

_CHANGES_SINCE = {
    "small": st.integers(0, 40),
    "wide": st.integers(-(2**70), 2**70),
    "edge": st.sampled_from([-1, 0, 2**63 - 1, 2**63, 2**64, 10**30, -(2**63), MyInt(2),
                             MyInt(-2)]),
    "none": st.none(),
    "other": st.one_of(st.booleans(), st.floats(), texts(), st.sampled_from(
        ["3", "0", b"1", Decimal(3), 3 + 0j, [1], (1,), {1}, Opaque(), 1.0, float("inf"),
         -0.0])),
}
changes_since_values = st.sampled_from(sorted(_CHANGES_SINCE)).flatmap(_CHANGES_SINCE.__getitem__)


# --- the database ------------------------------------------------------------


def read_only(location: str | Path) -> Any:
    """A read-only connection to the signal log at ``location`` (a SQLite file or a URL).

    Both shapes answer ``execute(sql, params)`` with rows that iterate and
    have ``.get``; the caller closes it.
    """
    if is_url(str(location)):
        return open_backend(location).connect(writer=False)
    conn = apsw.Connection(str(location), flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(5000)
    return conn


TABLES = ("session_own_texts", "session_state_events", "session_state_heads",
          "session_upstream_links", "session_watch_cursors", "sessions")


def check_database(location: str | Path, *,
                   deleted: Iterable[tuple[str, str]] = ()) -> dict[str, int]:
    """Assert the signal log's invariants at ``location`` (file or URL); return row counts.

    * (SQLite) ``PRAGMA integrity_check`` is ``ok``; every table is there;
    * every cursor has ``last_seen <= notified <= material``;
    * every head is ``>= max(sequence)`` of its session's retained events, and equal
      to it when nothing of the session was pruned; no event lacks a head;
    * every cursor's watcher has a session entry (the restart sweep needs it);
    * nothing names a session in ``deleted`` (no orphan cursor, event, head or link).
    """
    on_server = is_url(str(location))
    conn = read_only(location)
    try:
        conn.execute("BEGIN")  # one snapshot for every check
        try:
            if on_server:
                tables = {str(n) for (n,) in conn.execute(
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = current_schema()")}
            else:
                assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
                tables = {str(n) for (n,) in conn.execute(
                    "SELECT name FROM sqlite_schema WHERE type = 'table'")}
            assert set(TABLES) <= tables, f"tables missing: {set(TABLES) - tables}"
            bad_cursors = conn.execute(
                "SELECT * FROM session_watch_cursors WHERE NOT (last_seen_sequence"
                " <= notified_sequence AND notified_sequence <= material_sequence)").fetchall()
            assert not bad_cursors, f"cursors out of order: {bad_cursors[:5]}"
            heads = conn.execute(
                "SELECT h.session_key, h.agent_id, h.last_sequence, h.pruned_max_sequence,"
                " (SELECT max(e.sequence) FROM session_state_events AS e"
                "  WHERE e.session_key = h.session_key AND e.agent_id = h.agent_id)"
                " FROM session_state_heads AS h").fetchall()
            for key, agent, last, pruned, newest in heads:
                if pruned == 0:
                    assert newest == last, f"head {last} of {key!r}/{agent!r} != max {newest}"
                else:
                    assert newest is None or int(str(last)) >= int(str(newest)), (key, last)
            headless = conn.execute(
                "SELECT DISTINCT e.session_key, e.agent_id FROM session_state_events AS e"
                " WHERE NOT EXISTS (SELECT 1 FROM session_state_heads AS h"
                " WHERE h.session_key = e.session_key AND h.agent_id = e.agent_id)").fetchall()
            assert not headless, f"events without a head: {headless[:5]}"
            watchers = {str(w) for (w,) in conn.execute(
                "SELECT DISTINCT watcher_session_key FROM session_watch_cursors")}
            entries = {(str(k), str(a)) for k, a in conn.execute(
                "SELECT session_key, agent_id FROM sessions")}
            missing = [w for w in watchers if (w, agent_of(w)) not in entries]
            assert not missing, f"cursors of watchers without an entry: {missing[:5]}"
            for key, agent in deleted:
                assert_session_gone(conn, key, agent)
            counts = {t: int(conn.execute(f"SELECT count(*) FROM {t}").get) for t in TABLES}
        finally:
            conn.execute("COMMIT")
    finally:
        conn.close()
    return counts


def assert_session_gone(conn: Any, key: str, agent: str) -> None:
    """Nothing in the database names the deleted session ``(key, agent)``."""
    for table in ("session_state_events", "session_state_heads", "sessions",
                  "session_upstream_links", "session_own_texts"):
        n = conn.execute(f"SELECT count(*) FROM {table}"
                         " WHERE session_key = ? AND agent_id = ?", (key, agent)).get
        assert n == 0, f"{n} rows of deleted {key!r}/{agent!r} left in {table}"
    n = conn.execute("SELECT count(*) FROM session_watch_cursors"
                     " WHERE target_session_key = ? AND target_agent_id = ?", (key, agent)).get
    assert n == 0, f"{n} orphan cursors on deleted {key!r}/{agent!r}"
    if agent == agent_of(key):
        n = conn.execute("SELECT count(*) FROM session_watch_cursors"
                         " WHERE watcher_session_key = ?", (key,)).get
        assert n == 0, f"{n} orphan cursors held by deleted {key!r}"
