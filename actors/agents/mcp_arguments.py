"""A tool call's arguments, checked against the tool's input schema (pure).

``ssa mcp`` lists each tool with a JSON Schema of the shape the MCP SDK
(pydantic) generates for a plain function: an object whose properties are
``string``, ``integer`` or ``boolean``, each maybe ``anyOf`` that and
``null``, with ``default`` and ``required``. :func:`checked_arguments` takes
exactly that subset and converts as pydantic's lax mode did when the SDK
served (``"5"`` and ``5.0`` are the integer 5, ``"yes"`` is true, a key the
schema does not name is ignored), with pydantic's words for what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ArgumentsRefused", "checked_arguments"]

_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


class ArgumentsRefused(ValueError):
    """The arguments do not fit the schema; ``str()`` is the sentence a client shows.

    Attributes:
        problems: ``(field, message)`` pairs, in the schema's order.
    """

    def __init__(self, title: str, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        count = len(problems)
        lines = [f"{count} validation error{'s' if count > 1 else ''} for {title}"]
        for field, message in problems:
            lines += [field, f"  {message}"]
        super().__init__("\n".join(lines))


class _Bad(Exception):
    """One value that does not fit (its message)."""


def _integer(value: object) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise _Bad("Input should be a valid integer, got a number with a fractional part")
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise _Bad("Input should be a valid integer, unable to parse string as an "
                       "integer") from None
    raise _Bad("Input should be a valid integer")


def _boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value in (0, 1):
            return bool(value)
        raise _Bad("Input should be a valid boolean, unable to interpret input")
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise _Bad("Input should be a valid boolean, unable to interpret input")
    raise _Bad("Input should be a valid boolean")


def _string(value: object) -> str:
    if isinstance(value, str):
        return value
    raise _Bad("Input should be a valid string")


_CONVERT = {"integer": _integer, "boolean": _boolean, "string": _string}


def _value(prop: Mapping[str, Any], value: object) -> object:
    """``value`` converted to the property's type (``_Bad`` when it does not fit)."""
    if "anyOf" in prop:
        types = [branch["type"] for branch in prop["anyOf"]]
        if value is None and "null" in types:
            return None
        kind = next(t for t in types if t != "null")
    else:
        kind = prop["type"]
    return _CONVERT[kind](value)


def checked_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments for the tool's function: each property converted, defaults filled.

    Args:
        schema: the tool's ``inputSchema`` (the subset this module describes).
        arguments: the call's ``arguments`` object (JSON-decoded).

    Returns:
        One entry per property of the schema that was given or has a default.

    Raises:
        ArgumentsRefused: a required property is missing or a value does not fit.
    """
    required = set(schema.get("required", ()))
    problems: list[tuple[str, str]] = []
    kwargs: dict[str, Any] = {}
    for name, prop in schema["properties"].items():
        if name not in arguments:
            if name in required:
                problems.append((name, "Field required"))
            elif "default" in prop:
                kwargs[name] = prop["default"]
            continue
        try:
            kwargs[name] = _value(prop, arguments[name])
        except _Bad as exc:
            problems.append((name, str(exc)))
    if problems:
        raise ArgumentsRefused(str(schema.get("title", "arguments")), problems)
    return kwargs
