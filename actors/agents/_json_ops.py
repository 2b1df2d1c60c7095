"""Path-level edits of a JSON/JSONC document, built on :mod:`actors.agents._jsonc`.

Each function takes the text and returns the new text (the same string when
nothing changes); the document is re-parsed after every single edit (lazily:
when the tree is next looked at), so offsets never go stale. Paths are lists
of object keys (``str``) and array indexes (``int``). Pure functions; any thread.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from actors.agents import _jsonc
from actors.agents._files import ConfigRefused

__all__ = ["EMPTY_DOCUMENT", "Doc"]

EMPTY_DOCUMENT = "{}\n"
"""What a file we create starts from."""

PathPart = str | int

MAX_EMPTY_TEXT = 4096
"""The longest original text of an empty container :attr:`Doc.filled` keeps (characters);
a longer one (pages of blank lines) comes back as ``[]``/``{}``."""


class Doc:
    """A document being edited: ``text`` plus a re-parsed tree after each edit.

    Args:
        text: the file's text, or ``None`` for a file that does not exist
            (the document starts as :data:`EMPTY_DOCUMENT`).
        name: the file, for messages.
        strict: plain JSON (``True``) or JSONC.

    Raises:
        ConfigRefused: the text is not such a document, or its root is not an object.
    """

    def __init__(self, text: str | None, name: str, *, strict: bool) -> None:
        self.name = name
        self.strict = strict
        self.original = text
        self.existed = text is not None and text.strip() != ""
        self.text = text if self.existed and text is not None else EMPTY_DOCUMENT
        self._root: _jsonc.Node | None = self._parse(self.text)
        self.filled: dict[tuple[PathPart, ...], str] = {}
        """Each container of the file as it was that an edit put a first child into: its
        path and its original text (``"[ ]"``), so an uninstall can give those bytes back
        (:meth:`restore_empty`). A blank file (empty, or only whitespace) counts as its
        root: path ``()`` with the file's own text."""
        self._blank: str | None = None
        """The blank text :meth:`restore_empty` gives the whole file back (``None``: none)."""
        if self.root.kind != "object":
            raise ConfigRefused(f"{name}: the document is not a JSON object; not changed")

    def _parse(self, text: str) -> _jsonc.Node:
        try:
            return _jsonc.parse(text, strict=self.strict)
        except _jsonc.JsoncError as exc:
            kind = "JSON" if self.strict else "JSON (or JSONC)"
            raise ConfigRefused(f"{self.name}: not valid {kind} ({exc}); not changed") from None

    @property
    def root(self) -> _jsonc.Node:
        """The document's tree, parsed again (lazily) after an edit."""
        if self._root is None:
            self._root = self._parse(self.text)  # our own edit must parse: a bug otherwise
        return self._root

    def _edit(self, new_text: str) -> None:
        """Take ``new_text``; it is parsed only when the tree is next needed (an install
        that makes one edit of a 30 MB ``~/.claude.json`` parses it once)."""
        self._root = None
        self.text = new_text

    def node(self, path: Sequence[PathPart]) -> _jsonc.Node | None:
        """The node at ``path``, or ``None`` when a part of it is missing."""
        node = self.root
        for part in path:
            if isinstance(part, str):
                if node.kind != "object":
                    return None
                member = _jsonc.find_member(node, part)
                if member is None:
                    return None
                node = member.value
            else:
                if node.kind != "array" or not 0 <= part < len(node.items):
                    return None
                node = node.items[part]
        return node

    def _filling(self, path: Sequence[PathPart], node: _jsonc.Node) -> None:
        """Note ``node`` (at ``path``) before a first child goes into it (the root of a
        blank file: the file's text)."""
        if tuple(path) in self.filled:
            return
        if not path and not self.existed:
            if self.original is not None and len(self.original) <= MAX_EMPTY_TEXT:
                self.filled[()] = self.original  # "" or whitespace: the file as it was
        elif (self.existed and not node.children()
                and node.end - node.start <= MAX_EMPTY_TEXT):
            self.filled[tuple(path)] = self.text[node.start:node.end]

    def restore_empty(self, originals: Mapping[tuple[PathPart, ...], str]) -> None:
        """Give each container in ``originals`` (path -> text it had before an install put
        a child in it) its original text back when it is empty again and differs from it
        only in whitespace (``[]`` back to ``[ ]``; a comment added since keeps its text).
        A blank file (root ``()`` with an original of only whitespace, or none) comes back
        whole from :meth:`result` when nothing but ``{}`` is left of it."""
        for path, original in originals.items():
            node = self.node(path)
            if node is None or node.children():
                continue
            if not path and not original.strip():
                if _squeezed(self.text) == "{}":
                    self._blank = original
                continue
            current = self.text[node.start:node.end]
            if current == original or _squeezed(current) != _squeezed(original):
                continue
            try:
                parsed = _jsonc.parse(original, strict=self.strict)
            except _jsonc.JsoncError:
                continue
            if parsed.kind == node.kind and not parsed.children():
                self._edit(self.text[:node.start] + original + self.text[node.end:])

    def _expect(self, path: Sequence[PathPart], kind: str) -> _jsonc.Node | None:
        node = self.node(path)
        if node is not None and node.kind != kind:
            where = ".".join(str(p) for p in path)
            raise ConfigRefused(f"{self.name}: {where} is not a JSON {kind}; not changed")
        return node

    def value(self, path: Sequence[PathPart]) -> Any:
        """The plain value at ``path`` (``None`` when missing)."""
        node = self.node(path)
        return None if node is None else node.value

    def set(self, path: list[str], value: Any) -> None:
        """Make ``path`` hold ``value``, creating the missing objects on the way."""
        for depth in range(len(path)):
            parent = self._expect(path[:depth], "object")
            assert parent is not None
            member = _jsonc.find_member(parent, path[depth])
            if member is None:
                self._filling(path[:depth], parent)
                nested: Any = value
                for key in reversed(path[depth + 1:]):
                    nested = {key: nested}
                self._edit(_jsonc.insert_member(self.text, parent, path[depth], nested))
                return
        node = self.node(path)
        assert node is not None
        if node.value != value or type(node.value) is not type(value):
            self._edit(_jsonc.replace_value(self.text, node, value))

    def set_member(self, path: Sequence[PathPart], key: str, value: Any) -> None:
        """Make member ``key`` of the object at ``path`` (which must exist) hold ``value``.

        Unlike :meth:`set`, ``path`` may go through arrays (a hook handler's keys).
        """
        parent = self._expect(path, "object")
        assert parent is not None
        member = _jsonc.find_member(parent, key)
        if member is None:
            self._filling(path, parent)
            self._edit(_jsonc.insert_member(self.text, parent, key, value))
        elif member.value.value != value or type(member.value.value) is not type(value):
            self._edit(_jsonc.replace_value(self.text, member.value, value))

    def append(self, path: list[str], value: Any) -> None:
        """Append ``value`` to the array at ``path`` (created when missing)."""
        node = self._expect(path, "array")
        if node is None:
            self.set(path, [value])
        else:
            self._filling(path, node)
            self._edit(_jsonc.append_element(self.text, node, value))

    def remove(self, path: list[PathPart], *, prune: int = 0,
               keep: Callable[[list[PathPart]], bool] | None = None) -> None:
        """Remove the member or element at ``path`` (nothing when it is missing).

        Then, up to ``prune`` times, the container that held it is removed
        too when it is left empty (so an install's ``"hooks": {...}`` goes
        away whole), unless ``keep(container_path)`` says it stays (it was
        there before the install).
        """
        if not path or self.node(path) is None:
            return
        parent_path = path[:-1]
        parent = self.node(parent_path)
        assert parent is not None
        last = path[-1]
        if isinstance(last, str):
            index = max(i for i, m in enumerate(parent.members) if m.key == last)
        else:
            index = last
        self._edit(_jsonc.remove_child(self.text, parent, index))
        emptied = self.node(parent_path)
        if (prune > 0 and parent_path and emptied is not None and not emptied.children()
                and not (keep is not None and keep(parent_path))):
            self.remove(parent_path, prune=prune - 1, keep=keep)

    def result(self, *, remove_empty: bool = True) -> str | None:
        """The text to write: ``None`` (remove the file) when an emptied file we edit holds
        ``{}`` and ``remove_empty`` (the install created it) allows.

        A file that did not exist (or was blank) and would be just ``{}`` is left as it was
        (not created, not filled); one that was blank before the install
        (:meth:`restore_empty`) gets its blank text back.
        """
        if not self.existed and self.text == EMPTY_DOCUMENT:
            return self.original
        if remove_empty and not self.root.children() and self.text.strip() == "{}":
            return None
        if self._blank is not None and _squeezed(self.text) == "{}":
            return self._blank
        return self.text


def _squeezed(text: str) -> str:
    """``text`` without its whitespace (what two layouts of one empty container share)."""
    return re.sub(r"\s+", "", text)
