"""Minimal textual edits of JSON and JSONC documents (settings files of the coding agents).

The person's settings file is edited in place, the way an editor would: a
member or array element is inserted after the last one or removed with the
separator that precedes it, and nothing else of the text moves. Installing
and then uninstalling therefore gives the original bytes back (the only
exception: an object or array that held only our entries and is left empty
is removed with them, see :func:`remove_child`).

Python has no well-kept library for such edits (``json`` and ``json5``
re-serialize and drop comments and layout; ``json-five`` keeps comments but
has no source positions to edit by; ``jsonc-edit`` runs a Node.js daemon that
installs npm packages at run time), so this module has a small parser that
records where each value sits in the text. ``strict=True`` accepts exactly
RFC 8259 JSON (what the tools that read the file accept: Claude Code and
Codex use plain JSON parsers); ``strict=False`` also accepts ``//`` and
``/* */`` comments and trailing commas (OpenCode's ``opencode.json`` is
JSONC, parsed with Microsoft's ``jsonc-parser``).

Pure functions; any thread; no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["JsoncError", "Member", "Node", "append_element", "dump_value", "find_member",
           "insert_member", "line_ending", "parse", "remove_child", "replace_value"]


class JsoncError(ValueError):
    """The text is not a JSON (or JSONC) document; the message gives line and column."""


@dataclass
class Member:
    """One ``"key": value`` of an object: ``start`` is where the key's quote is."""

    key: str
    start: int
    value: Node

    @property
    def end(self) -> int:
        """The offset just after the member's value."""
        return self.value.end


_UNSET: Any = object()


class Node:
    """One value with its place in the text (``end`` is exclusive).

    ``members`` is set for objects, ``items`` for arrays; ``value`` is the
    plain Python value of the whole node. In a strict (JSON) document a nested
    container is parsed lazily: the document was validated whole by the C
    decoder, and its members, items and value are worked out only when asked
    (so a 30 MB ``~/.claude.json`` costs one C pass, not a Python walk of it).
    """

    __slots__ = ("_items", "_members", "_text", "_value", "end", "kind", "start")

    def __init__(self, kind: str, start: int, end: int, value: Any = _UNSET, *,
                 members: list[Member] | None = None, items: list[Node] | None = None,
                 text: str | None = None) -> None:
        self.kind = kind  # "object", "array", "string", "number", "literal"
        self.start = start
        self.end = end
        self._value = value
        self._members = members
        self._items = items
        self._text = text  # set for a lazy container: the document it sits in

    def _expand(self) -> None:
        assert self._text is not None
        parser = _Parser(self._text, strict=True, lazy=True)
        parser.pos = self.start
        self._members, self._items, _end = parser.children(
            1, self.kind, "}" if self.kind == "object" else "]")

    @property
    def members(self) -> list[Member]:
        """An object's members, in order (empty for anything else)."""
        if self._members is None:
            if self.kind != "object":
                return []
            self._expand()
            assert self._members is not None
        return self._members

    @property
    def items(self) -> list[Node]:
        """An array's elements, in order (empty for anything else)."""
        if self._items is None:
            if self.kind != "array":
                return []
            self._expand()
            assert self._items is not None
        return self._items

    @property
    def value(self) -> Any:
        """The plain Python value of the whole node (decoded when first asked)."""
        if self._value is _UNSET:
            assert self._text is not None
            self._value = json.loads(self._text[self.start:self.end])
        return self._value

    def children(self) -> list[tuple[int, int]]:
        """``(start, end)`` of each member or element, in order."""
        if self.kind == "object":
            return [(m.start, m.end) for m in self.members]
        return [(n.start, n.end) for n in self.items]


_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_WS = " \t\n\r"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)
"""The C decoder, strict RFC 8259 (``NaN``/``Infinity`` refused), for skipping values."""


class _Parser:
    def __init__(self, text: str, strict: bool, lazy: bool = False) -> None:
        self.text = text
        self.strict = strict
        self.lazy = lazy and strict  # JSONC has comments the C decoder does not know
        self.pos = 0

    def fail(self, message: str, pos: int | None = None) -> JsoncError:
        where = self.pos if pos is None else pos
        line = self.text.count("\n", 0, where) + 1
        column = where - (self.text.rfind("\n", 0, where) + 1) + 1
        return JsoncError(f"{message} at line {line}, column {column}")

    def skip(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in _WS:
                self.pos += 1
            elif c == "/" and not self.strict and text.startswith("//", self.pos):
                nl = text.find("\n", self.pos)
                self.pos = n if nl < 0 else nl + 1
            elif c == "/" and not self.strict and text.startswith("/*", self.pos):
                close = text.find("*/", self.pos + 2)
                if close < 0:
                    raise self.fail("unterminated comment")
                self.pos = close + 2
            else:
                return

    def child(self, depth: int) -> Node:
        """A member's value or an element: a nested container is validated in C and left
        to expand lazily (strict documents only)."""
        if not self.lazy:
            return self.value(depth)
        self.skip()
        if self.pos < len(self.text) and self.text[self.pos] in "{[":
            start = self.pos
            try:  # validates the whole value in C; the decoded value is dropped
                end = int(_DECODER.raw_decode(self.text, start)[1])
            except json.JSONDecodeError as exc:
                raise self.fail(exc.msg, exc.pos) from None
            except ValueError as exc:
                raise self.fail(str(exc), start) from None
            self.pos = end
            return Node("object" if self.text[start] == "{" else "array", start, end,
                        text=self.text)
        return self.value(depth)

    def value(self, depth: int = 0) -> Node:
        if depth > 500:
            raise self.fail("nesting too deep")
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of text")
        c = self.text[self.pos]
        if c == "{":
            return self.container(depth, "object", "}")
        if c == "[":
            return self.container(depth, "array", "]")
        if c == '"':
            start = self.pos
            text = self.string()
            return Node("string", start, self.pos, text)
        for word, literal in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                start = self.pos
                self.pos += len(word)
                return Node("literal", start, self.pos, literal)
        match = _NUMBER.match(self.text, self.pos)
        if match:
            start, self.pos = self.pos, match.end()
            return Node("number", start, self.pos, json.loads(match.group()))
        raise self.fail(f"unexpected character {c!r}")

    def string(self) -> str:
        start = self.pos
        i = start + 1
        text, n = self.text, len(self.text)
        while i < n:
            c = text[i]
            if c == '"':
                self.pos = i + 1
                try:
                    return str(json.loads(text[start:self.pos]))
                except ValueError:
                    raise self.fail("invalid string", start) from None
            if c == "\\":
                i += 2
                continue
            if c < " ":
                raise self.fail("control character in string", i)
            i += 1
        raise self.fail("unterminated string", start)

    def container(self, depth: int, kind: str, close: str) -> Node:
        node_start = self.pos
        members, items, end = self.children(depth, kind, close)
        if self.lazy:  # the value is decoded when asked
            return Node(kind, node_start, end, members=members, items=items, text=self.text)
        value: Any = ({m.key: m.value.value for m in members} if kind == "object"
                      else [n.value for n in items])
        return Node(kind, node_start, end, value, members=members, items=items)

    def children(self, depth: int, kind: str, close: str
                 ) -> tuple[list[Member], list[Node], int]:
        """The members (object) or items (array) of the container at ``pos``, and its end."""
        members: list[Member] = []
        items: list[Node] = []
        self.pos += 1
        self.skip()
        if self.text.startswith(close, self.pos):
            self.pos += 1
            return members, items, self.pos
        while True:
            self.skip()
            if kind == "object":
                if not self.text.startswith('"', self.pos):
                    raise self.fail("expected a quoted key")
                key_start = self.pos
                key = self.string()
                self.skip()
                if not self.text.startswith(":", self.pos):
                    raise self.fail("expected ':'")
                self.pos += 1
                members.append(Member(key, key_start, self.child(depth + 1)))
            else:
                items.append(self.child(depth + 1))
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                self.skip()
                if self.text.startswith(close, self.pos):
                    if self.strict:
                        raise self.fail("trailing comma")
                    break
                continue
            if self.text.startswith(close, self.pos):
                break
            raise self.fail(f"expected ',' or {close!r}")
        self.pos += 1
        return members, items, self.pos


def parse(text: str, *, strict: bool = True) -> Node:
    """Parse a whole document into a :class:`Node` tree with text offsets.

    Args:
        text: the document (a leading BOM is refused: none of the tools writes one).
        strict: plain JSON only (nested containers are validated by the C decoder
            and expanded lazily); ``False`` also allows comments and trailing commas.

    Raises:
        JsoncError: not a document of that kind (the message has line and column).
    """
    parser = _Parser(text, strict, lazy=strict)
    try:
        node = parser.value()
    except RecursionError:
        raise parser.fail("nested too deeply") from None
    parser.skip()
    if parser.pos != len(text):
        raise parser.fail("text after the document")
    return node


def find_member(node: Node, key: str) -> Member | None:
    """The member ``key`` of an object node (the last one if the key repeats, as JSON.parse)."""
    found = None
    for member in node.members:
        if member.key == key:
            found = member
    return found


def _line_indent(text: str, pos: int) -> str:
    """The whitespace that starts the line holding ``pos``."""
    line_start = text.rfind("\n", 0, pos) + 1
    end = line_start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[line_start:end]


def indent_unit(text: str) -> str:
    """The document's indentation step: the first indented line's leading whitespace."""
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else "  "


def line_ending(text: str) -> str:
    """The document's line ending: ``"\r\n"`` when its first line ends so, else ``"\n"``."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def dump_value(value: Any, unit: str, base: str, *, inline: bool = False,
               newline: str = "\n") -> str:
    """``value`` as JSON text placed at indentation ``base`` (``inline``: on one line),
    its lines ended with ``newline``."""
    if inline:
        return str(json.dumps(value, ensure_ascii=False, separators=(", ", ": ")))
    if unit.strip(" ") == "":
        dumped = str(json.dumps(value, ensure_ascii=False, indent=len(unit)))
    else:  # tabs
        dumped = str(json.dumps(value, ensure_ascii=False, indent=unit))
    return dumped.replace("\n", newline + base)


def _insert(text: str, node: Node, piece_of: Callable[[bool, str, str, str], str]) -> str:
    """Insert a child at the end of container ``node``, its lines ended like the
    document's (:func:`line_ending`).

    ``piece_of(inline, unit, base, newline)`` renders the child's text.
    """
    unit = indent_unit(text)
    nl = line_ending(text)
    container_indent = _line_indent(text, node.start)
    children = node.children()
    if not children:
        base = container_indent + unit
        inside = text[node.start + 1:node.end - 1]
        comments = list(_COMMENT.finditer(inside))
        if comments:  # "mcp": { // none yet }: the comment stays, the child goes after it
            at = node.start + 1 + comments[-1].end()
            return text[:at] + nl + base + piece_of(False, unit, base, nl) + text[at:]
        inner = nl + base + piece_of(False, unit, base, nl) + nl + container_indent
        return text[:node.start + 1] + inner + text[node.end - 1:]
    multiline = "\n" in text[node.start:node.end]
    last_start, last_end = children[-1]
    if multiline:
        base = _line_indent(text, last_start)
        if text.rfind("\n", 0, last_start) < node.start:  # first child on the opening line
            base = container_indent + unit
        addition = "," + nl + base + piece_of(False, unit, base, nl)
    else:
        addition = ", " + piece_of(True, unit, "", nl)
    return text[:last_end] + addition + text[last_end:]


def insert_member(text: str, node: Node, key: str, value: Any) -> str:
    """Add ``"key": value`` after the last member of object ``node`` (the key must be new)."""
    quoted = json.dumps(key, ensure_ascii=False)
    return _insert(text, node, lambda inline, unit, base, nl:
                   f"{quoted}: {dump_value(value, unit, base, inline=inline, newline=nl)}")


def append_element(text: str, node: Node, value: Any) -> str:
    """Add ``value`` after the last element of array ``node``."""
    return _insert(text, node, lambda inline, unit, base, nl:
                   dump_value(value, unit, base, inline=inline, newline=nl))


def replace_value(text: str, node: Node, value: Any) -> str:
    """Replace the text of ``node`` with ``value`` laid out at its line's indentation."""
    base = _line_indent(text, node.start)
    inline = "\n" not in text[node.start:node.end] and node.kind not in ("object", "array")
    rendered = dump_value(value, indent_unit(text), base, inline=inline,
                          newline=line_ending(text))
    return text[:node.start] + rendered + text[node.end:]


def remove_child(text: str, node: Node, index: int) -> str:
    """Remove member or element ``index`` of container ``node`` with its separator.

    A child after the first is removed from the end of the one before it to
    its own end (exactly what :func:`insert_member` / :func:`append_element`
    added); the first of several from its start to the next one's start. The
    last remaining child takes the whitespace inside the brackets with it
    (``{}`` remains) unless a comment sits there.
    """
    children = node.children()
    start, end = children[index]
    if len(children) == 1:
        inner = text[node.start + 1:node.end - 1]
        rest = inner[:start - node.start - 1] + inner[end - node.start - 1:]
        if rest.strip(_WS + ",") == "":
            return text[:node.start + 1] + text[node.end - 1:]
        tail = end
        while tail < node.end - 1 and text[tail] in _WS:
            tail += 1
        if text[tail] == ",":
            end = tail + 1
        head = start  # from the end of what precedes it (a comment), as _insert put it
        while head > node.start + 1 and text[head - 1] in _WS:
            head -= 1
        return text[:head] + text[end:]
    if index > 0:  # from the end of the one before: keep the comments in that gap
        gap_start = children[index - 1][1]
        return text[:gap_start] + _comments_kept(text[gap_start:start], lead=False) + \
            text[end:]
    gap = text[end:children[1][0]]  # up to the next one: keep the comments in that gap
    return text[:start] + _comments_kept(gap, lead=True) + text[children[1][0]:]


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _comments_kept(gap: str, *, lead: bool) -> str:
    """What stays of the separator ``gap`` (whitespace, one comma, comments) when the
    member beside it goes: nothing when it holds no comment, else the comments with the
    layout between them (``lead``: the gap after a removed first member, so the
    whitespace before the first comment goes; else the whitespace after the last)."""
    comments = list(_COMMENT.finditer(gap))
    if not comments:
        return ""
    comma = next((i for i, ch in enumerate(gap) if ch == ","
                  and not any(c.start() <= i < c.end() for c in comments)), None)
    if comma is not None:
        gap = gap[:comma] + gap[comma + 1:]
        comments = list(_COMMENT.finditer(gap))
    if lead:
        return gap[comments[0].start():]
    return gap[:comments[-1].end()]
