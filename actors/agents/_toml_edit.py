"""``[mcp_servers.ssa]`` in Codex's ``config.toml``: added, replaced or removed as text.

The table is appended at the end of the file (TOML tables may come in any
order) and removed as the lines from its header to the next header, so
install + uninstall gives the person's file back byte for byte (a file
without a final newline keeps the one added). Every result is checked by
parsing it (``tomllib``) and comparing with the expected configuration; when
the textual edit cannot give that (the entry is an inline table, dotted keys,
...), the edit is made through ``tomlkit``, which keeps comments and layout
but may move blank lines. Pure functions; any thread.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from typing import Any

from actors.agents._files import ConfigRefused
from actors.agents._jsonc import line_ending

__all__ = ["parse", "remove_hook_states", "remove_table", "set_table", "update_keys"]

_HEADER = re.compile(r"^[ \t]*\[\[?[^\n]*$", re.MULTILINE)


def _our_header(table: str, name: str) -> re.Pattern[str]:
    """The header ``[table.name]`` (``table`` may be dotted: ``hooks.state``), the name
    bare, in a basic or a literal string."""
    basic = json.dumps(name, ensure_ascii=False)[1:-1]
    quoted = (rf'(?:{re.escape(name)}|"{re.escape(basic)}"|"{re.escape(name)}"'
              rf"|'{re.escape(name)}')")
    dotted = r"[ \t]*\.[ \t]*".join(re.escape(part) for part in table.split("."))
    return re.compile(rf"^[ \t]*\[[ \t]*{dotted}[ \t]*\.[ \t]*{quoted}"
                      rf"[ \t]*(?:\][ \t]*(?:#[^\r\n]*)?\r?$|\.)", re.MULTILINE)


def _region(text: str, table: str, name: str) -> tuple[int, int] | None:
    """Where ``[table.name]`` (with its sub-tables) is: from its header line to the next,
    less the comment lines at its end (with the blank lines between them): a comment
    above the next table, or at the end of the file, is the person's and stays."""
    ours = _our_header(table, name)
    match = ours.search(text)
    if match is None:
        return None
    start = match.start()
    end = len(text)
    for header in _HEADER.finditer(text, match.end()):
        if not ours.match(text, header.start()):
            end = header.start()
            break
    return start, _before_trailing_comments(text, start, end)


def _before_trailing_comments(text: str, start: int, end: int) -> int:
    """``end`` moved back over the comment lines (and blank lines among them) that end
    ``text[start:end]``, keeping the blank lines right after its last content line."""
    lines = text[start:end].splitlines(keepends=True)
    last_content = max(i for i, line in enumerate(lines)
                       if line.strip() and not line.lstrip().startswith("#"))
    first_comment = next((i for i in range(last_content + 1, len(lines))
                          if lines[i].lstrip().startswith("#")), None)
    if first_comment is None:
        return end
    return start + sum(len(line) for line in lines[:first_comment])


def parse(text: str, name: str) -> dict[str, Any]:
    """The TOML document as plain values.

    Raises:
        ConfigRefused: not TOML (the message names the file).
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigRefused(f"{name}: not valid TOML ({exc}); not changed") from None


def _block(table: str, key: str, entry: dict[str, Any]) -> str:
    import tomlkit  # noqa: PLC0415 -- only Codex installs need it

    body = tomlkit.dumps({table: {key: entry}})
    return body.lstrip("\n") if body.startswith("\n") else body


def _expected(parsed: dict[str, Any], table: str, key: str,
              entry: dict[str, Any] | None) -> dict[str, Any]:
    """``parsed`` with ``table.key`` set to ``entry`` (``None``: removed)."""
    result = dict(parsed)
    servers = dict(result.get(table, {}))
    if entry is None:
        servers.pop(key, None)
    else:
        servers[key] = entry
    result[table] = servers
    normal = _normal(result, table)
    assert normal is not None
    return normal


def _normal(parsed: dict[str, Any] | None, table: str) -> dict[str, Any] | None:
    """An empty ``table`` counts as no table (``[mcp_servers]`` alone means nothing)."""
    if parsed is not None and parsed.get(table) == {}:
        parsed = {k: v for k, v in parsed.items() if k != table}
    return parsed


def _via_tomlkit(old: str, table: str, key: str, entry: dict[str, Any] | None) -> str:
    import tomlkit  # noqa: PLC0415

    doc = tomlkit.parse(old)
    servers = doc.get(table)
    if entry is None:
        if servers is not None and key in servers:
            del servers[key]
            if len(servers) == 0:
                del doc[table]
    elif servers is None:
        doc[table] = {key: entry}
    else:
        servers[key] = entry
    return tomlkit.dumps(doc)


def set_table(old: str | None, name: str, table: str, key: str,
              entry: dict[str, Any]) -> str:
    """``old`` with ``[table.key]`` = ``entry`` (appended when new, replaced in place otherwise).

    Raises:
        ConfigRefused: ``old`` is not TOML, or no edit gives the expected document.
    """
    text = old or ""
    parsed = parse(text, name)
    expected = _expected(parsed, table, key, entry)
    if table in parsed and not isinstance(parsed[table], dict):
        raise ConfigRefused(f"{name}: {table} is not a table; not changed")
    nl = line_ending(text)  # a CRLF file gets CRLF lines
    block = _block(table, key, entry).replace("\n", nl)
    region = _region(text, table, key)
    if region is None:
        glue = "" if text == "" else (nl if text.endswith("\n") else nl + nl)
        new = text + glue + block
    else:
        start, end = region
        kept_blank = text[start:end][len(text[start:end].rstrip("\r\n")):]
        new = text[:start] + block.rstrip("\r\n") + (kept_blank or nl) + text[end:]
    if _normal(_safe_parse(new), table) != expected:
        new = _via_tomlkit(text, table, key, entry)
        if _normal(_safe_parse(new), table) != expected:
            raise ConfigRefused(f"{name}: cannot add [{table}.{key}] to this file (is "
                                f"{table} an inline table?); not changed")
    return new


def update_keys(old: str, name: str, table: str, key: str, changes: dict[str, Any]) -> str:
    """``old`` with the keys ``changes`` names set in ``[table.key]``, every other key and
    comment of the table left as it is (through ``tomlkit``).

    Raises:
        ConfigRefused: ``old`` is not TOML, or the edit does not give the expected document.
    """
    import tomlkit  # noqa: PLC0415

    parsed = parse(old, name)
    entry = {**parsed.get(table, {}).get(key, {}), **changes}
    expected = _expected(parsed, table, key, entry)
    doc = tomlkit.parse(old)
    target = doc[table][key]
    for field, value in changes.items():
        target[field] = value
    new = tomlkit.dumps(doc)
    if _normal(_safe_parse(new), table) != expected:
        raise ConfigRefused(f"{name}: cannot update [{table}.{key}] in this file; "
                            "not changed")
    return new


def remove_table(old: str, name: str, table: str, key: str) -> str:
    """``old`` without ``[table.key]`` (and without ``[table]`` when that leaves it empty).

    Raises:
        ConfigRefused: ``old`` is not TOML, or no edit gives the expected document.
    """
    parsed = parse(old, name)
    if key not in parsed.get(table, {}):
        return old
    expected = _expected(parsed, table, key, None)
    region = _region(old, table, key)
    new = None
    if region is not None:
        start, end = region
        new = old[:start] + old[end:]
        nl = line_ending(old)
        if end == len(old) and new.endswith(nl + nl):
            new = new[:-len(nl)]  # the blank line install put before the table
    if new is None or _normal(_safe_parse(new), table) != expected:
        new = _via_tomlkit(old, table, key, None)
        if _normal(_safe_parse(new), table) != expected:
            raise ConfigRefused(f"{name}: cannot remove [{table}.{key}] from this file; "
                                "not changed")
    return new


def remove_hook_states(old: str, name: str, keys: list[str]) -> str:
    """``old`` without the ``[hooks.state."<key>"]`` tables of ``keys`` (Codex's record
    of the hooks the person trusted: ours go with our hooks); others stay as they are.

    Raises:
        ConfigRefused: ``old`` is not TOML, or no edit gives the expected document.
    """
    parsed = parse(old, name)
    hooks = parsed.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    present = [key for key in keys if isinstance(state, dict) and key in state]
    if not present:
        return old
    expected = copy.deepcopy(parsed)
    for key in present:
        del expected["hooks"]["state"][key]
    new: str | None = old
    for key in present:
        assert new is not None
        region = _region(new, "hooks.state", key)
        if region is None:
            new = None
            break
        new = new[:region[0]] + new[region[1]:]
    if new is None or _safe_parse(new) != expected:
        import tomlkit  # noqa: PLC0415

        doc = tomlkit.parse(old)
        for key in present:
            del doc["hooks"]["state"][key]
        new = tomlkit.dumps(doc)
        if _safe_parse(new) != expected:
            raise ConfigRefused(f"{name}: cannot remove the trust records of the ssa hooks "
                                "([hooks.state]); not changed")
    return new


def _safe_parse(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
