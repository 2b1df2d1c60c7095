"""The edits ``ssa install`` makes to each tool's files, and how it recognises its own entries.

What lives here: recognising our entries by what they run (a hook whose
command is ``<path>/ssa hook <tool>``, an MCP server ``ssa`` that runs
``<path>/ssa mcp``, a file whose first line is
:data:`~actors.agents.installsetup.MARKER`), and the transforms
``old text -> new text`` that put them in or take them out: Claude Code's
and Codex's hook groups in JSON, MCP entries in JSON/JSONC
(:mod:`actors.agents._json_ops`) and in TOML (:mod:`actors.agents._toml_edit`),
and files we own whole (the plugin, the extension). Pure: the file system
is :mod:`actors.agents._files`'s.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import re
import shlex
from collections.abc import Callable
from typing import Any

from actors.agents import _toml_edit
from actors.agents._files import ConfigRefused
from actors.agents._json_ops import Doc
from actors.agents.installmerge import (
    HandlerEdits,
    carry_argv,
    env_prefix,
    handler_edits,
    join_command,
    merge_argv,
    merge_entry,
)
from actors.agents.installsetup import HOOK_TIMEOUT_S, MARKER, MCP_NAME, Setup
from actors.agents.push import PushPath
from actors.agents.tools import tool_named

__all__ = [
    "HOOK_EVENTS",
    "data_text",
    "has_marker",
    "hook_events",
    "hook_groups",
    "hooks_transform",
    "is_our_hook",
    "is_our_hook_command",
    "is_our_mcp_entry",
    "kept_note",
    "mcp_json_transform",
    "owned_file_transform",
    "plugin_transform",
    "render_plugin",
    "settings_transform",
    "toml_transform",
]


# --- recognising our entries -------------------------------------------------------

def _is_ssa_path(command: object) -> bool:
    return isinstance(command, str) and os.path.basename(command).startswith("ssa")


def is_our_hook_command(command: object, tool: str) -> bool:
    """Whether a hook's command line runs ``<dir>/ssa hook <tool>``, perhaps after
    environment assignments a person put in front (``SSA_DB=/x <dir>/ssa hook <tool>``)."""
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    argv = argv[len(env_prefix(argv)):]
    return len(argv) >= 3 and _is_ssa_path(argv[0]) and argv[1:3] == ["hook", tool]


def is_our_mcp_entry(entry: object) -> bool:
    """Whether an MCP server entry runs ``<dir>/ssa mcp`` (JSON ``command`` + ``args``,
    or OpenCode's ``command`` list)."""
    if not isinstance(entry, dict):
        return False
    command = entry.get("command")
    if isinstance(command, list):
        return len(command) >= 2 and _is_ssa_path(command[0]) and command[1] == "mcp"
    args = entry.get("args")
    return (_is_ssa_path(command) and isinstance(args, list) and bool(args)
            and args[0] == "mcp")


# --- hooks in Claude Code / Codex JSON --------------------------------------------

HOOK_EVENTS = ("UserPromptSubmit", "SessionStart")
"""The usual prompt-hook events: every prompt, and every session start (startup, resume,
clear, compact); a tool names its own (``AgentTool.hook_events``)."""


def _push(tool: str) -> PushPath | None:
    found = tool_named(tool)
    return found.push if found is not None else None


def hook_events(tool: str) -> tuple[str, ...]:
    """Every event that may hold our handler for ``tool`` (uninstall looks at each)."""
    push = _push(tool)
    extra = () if push is None else tuple(e for e in (push.hook_event, push.mid_turn_event)
                                          if e is not None)
    events = (*_prompt_events(tool), *extra)
    return (*events, *(e for e in _activity_events(tool) if e not in events))


def _activity_events(tool: str) -> dict[str, list[str]]:
    """The events of the tool's activity rules, each with the kinds it is asked for
    (an empty list: every kind), in the rules' order."""
    found = tool_named(tool)
    events: dict[str, list[str]] = {}
    for rule in found.activity if found is not None else ():
        name, _, kind = rule.event.partition(":")
        kinds = events.setdefault(name, [])
        if kind:
            kinds.append(kind)
    return events


def _prompt_events(tool: str) -> tuple[str, ...]:
    found = tool_named(tool)
    return found.hook_events if found is not None and found.hook_events else HOOK_EVENTS


def _timeout(tool: str) -> int:
    """The prompt hook's ``timeout`` in the tool's unit."""
    found = tool_named(tool)
    return HOOK_TIMEOUT_S * 1000 if found is not None and found.timeout_unit_ms \
        else HOOK_TIMEOUT_S


def hook_groups(setup: Setup, tool: str) -> dict[str, dict[str, Any]]:
    """The matcher group we put under each event (no matcher: every source).

    With ``setup.wake`` and a tool whose push path is a hook
    (:mod:`actors.agents.push`), also its waiting hook: ``ssa hook <tool> --wait``
    with the path's extra fields; and for a tool with a mid-turn event, the
    prompt hook under that event too. Under each event of the tool's activity
    rules (:mod:`actors.agents.activity`), ``ssa hook <tool> --activity`` (a
    ``matcher`` of the kinds asked for); where the waiting hook already runs, it
    takes ``--activity`` itself (one handler of ours per event).
    """
    handler = {"type": "command", "command": setup.hook_command(tool),
               "timeout": _timeout(tool)}
    groups: dict[str, dict[str, Any]] = {event: {"hooks": [dict(handler)]}
                                         for event in _prompt_events(tool)}
    push = _push(tool)
    if setup.wake and push is not None and push.hook_event is not None:
        waiting = {"type": "command", "command": setup.hook_command(tool) + " --wait",
                   **dict(push.hook_fields)}
        groups[push.hook_event] = {"hooks": [waiting]}
    if setup.wake and push is not None and push.mid_turn_event is not None:
        groups[push.mid_turn_event] = {"hooks": [{**handler, **dict(push.mid_turn_fields)}]}
    found = tool_named(tool)
    activity = " --activity" + ("" if setup.permission_wait is None
                                else f" --permission-wait {setup.permission_wait:g}")
    for event, kinds in _activity_events(tool).items():
        if event in groups:  # the waiting hook of that event also says where it stands
            groups[event]["hooks"][0]["command"] += activity
            continue
        group: dict[str, Any] = {"matcher": "|".join(kinds)} if kinds else {}
        group["hooks"] = [{"type": "command", "command": setup.hook_command(tool) + activity,
                           **dict(found.activity_fields if found is not None else ())}]
        groups[event] = group
    return groups


def is_our_hook(tool: str) -> Callable[[Any], bool]:
    """A test of a hook handler (a JSON object): whether it runs ``ssa hook <tool>``."""
    return lambda hook: isinstance(hook, dict) and is_our_hook_command(hook.get("command"), tool)


def _remove_hooks(doc: Doc, event: str, tool: str,
                  keep: Callable[[list[str | int]], bool] | None = None) -> None:
    """Remove our handlers of ``event``; a group left with none goes too, and so on up
    (but for a container ``keep`` says was there before the install)."""
    ours = is_our_hook(tool)
    while True:
        groups = doc.node(["hooks", event])
        if groups is None or groups.kind != "array":
            return
        for gi, group in enumerate(groups.items):
            handlers = group.value.get("hooks") if isinstance(group.value, dict) else None
            if not isinstance(handlers, list):
                continue
            hit = next((hi for hi, h in enumerate(handlers) if ours(h)), None)
            if hit is None:
                continue
            if len(handlers) == 1:  # the whole group is ours (or only our handler is left)
                doc.remove(["hooks", event, gi], prune=2, keep=keep)
            else:
                doc.remove(["hooks", event, gi, "hooks", hit])
            break
        else:
            return


HOOK_HEAD = 3
"""``[ssa, "hook", tool]``: the part of a hook's command line that is ours whole."""


def kept_note(name: str, kept: list[str], added: list[str] | None = None) -> str:
    """The line telling the person which of their edits of our entries a re-install kept
    (``kept``: each as the file has it, e.g. ``--scope all``), and, with ``added``, the
    events whose new hooks took those edits too (pure)."""
    unique = ", ".join(dict.fromkeys(kept))
    carried = (f"; the ssa hooks this install added ({', '.join(dict.fromkeys(added))}) "
               "took them too, where they apply" if added else "")
    return (f"kept your edits of the ssa entries in {name}: {unique}{carried} (an option "
            "given to ssa install replaces the file's)")


def _edits_of_ours(doc: Doc, tool: str) -> HandlerEdits:
    """The person's edits of our handlers in ``doc`` that the handlers an install adds
    take too (:func:`actors.agents.installmerge.handler_edits`), looked at in the order
    of the tool's events."""
    argvs: list[list[str]] = []
    for event in hook_events(tool):
        for _event, gi, hi in _places_of_ours(doc, event, tool):
            try:
                argvs.append(shlex.split(doc.value(["hooks", event, gi, "hooks", hi,
                                                    "command"])))
            except ValueError:  # (is_our_hook_command split it: not reached)
                continue
    return handler_edits(argvs, HOOK_HEAD)


def _with_edits(group: dict[str, Any], edits: HandlerEdits, setup: Setup,
                carried: list[str]) -> dict[str, Any]:
    """``group`` (from :func:`hook_groups`) with the person's ``edits`` carried into its
    handler's command line; what was carried is added to ``carried``."""
    if not edits:
        return group
    handler = group["hooks"][0]
    argv, carried_here = carry_argv(edits, shlex.split(handler["command"]), HOOK_HEAD,
                                    setup.explicit)
    if not carried_here:
        return group
    carried += carried_here
    return {**group, "hooks": [{**handler, "command": join_command(argv)}]}


def _update_ours(doc: Doc, event: str, tool: str, group: dict[str, Any], setup: Setup,
                 kept: list[str]) -> bool:
    """Bring our one handler under ``event`` up to date in place; ``False`` when there
    is not exactly one (then it is removed and added afresh)."""
    found = _places_of_ours(doc, event, tool)
    if len(found) != 1:
        return False
    _event, gi, hi = found[0]
    path: list[str | int] = ["hooks", event, gi, "hooks", hi]
    if _waits(doc.value(path)) != _waits(group["hooks"][0]):
        return False  # another hook now (the waiting one, or the activity one alone)
    changes, kept_here = merge_entry(doc.value(path), group["hooks"][0],
                                     {"command": HOOK_HEAD}, setup.explicit)
    kept += kept_here
    for key, value in changes.items():
        doc.set_member(path, key, value)
    return True


def _waits(handler: Any) -> bool:
    """Whether a handler of ours runs the waiting hook (``--wait`` on its command line)."""
    command = handler.get("command") if isinstance(handler, dict) else None
    return isinstance(command, str) and "--wait" in command.split()


def _places_of_ours(doc: Doc, event: str, tool: str) -> list[tuple[str, int, int]]:
    ours = is_our_hook(tool)
    return [(event, gi, hi) for gi, g in enumerate(doc.value(["hooks", event]) or [])
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for hi, h in enumerate(g["hooks"]) if ours(h)]


def hooks_transform(setup: Setup, tool: str, name: str, *, install: bool,
                    wrapper: dict[str, Any] | None = None, notes: list[str] | None = None,
                    removed: list[tuple[str, int, int]] | None = None, strict: bool = True
                    ) -> Callable[[str | None], str | None]:
    """The settings file's change: our two hook groups in, or out.

    ``wrapper`` (a plugin's ``hooks.json``) are extra top-level keys of a file we own.
    A re-install updates our handlers in place (:mod:`actors.agents.installmerge`):
    the person's edits of them (``--scope all``, a longer ``timeout``, a ``matcher``)
    stay, and a line saying so goes to ``notes``; a handler it adds takes their
    ``VAR=value`` prefix and their ``--db``/``--scope`` (not given on this command line)
    too, so the tool's hooks share one database and scope. ``removed`` collects where each of
    our handlers sat, ``(event, group index, handler index)``, before it was removed
    (Codex keys its trust records by that place). ``strict``: plain JSON (Claude Code,
    Codex), else JSONC (Gemini CLI and Qwen Code strip comments before parsing).
    """
    def transform(old: str | None) -> str | None:
        doc = Doc(old, name, strict=strict)
        hooks = doc.node(["hooks"])
        if hooks is not None and hooks.kind != "object":
            raise ConfigRefused(f"{name}: \"hooks\" is not an object; not changed")
        groups = hook_groups(setup, tool)
        kept: list[str] = []
        record = setup.record
        keep = record.keeps(name) if record is not None else None
        created: list[tuple[str, ...]] = [("hooks",)] if doc.node(["hooks"]) is None else []
        edits = _edits_of_ours(doc, tool) if install else HandlerEdits()
        added: list[str] = []
        for event in hook_events(tool):
            group = groups.get(event)
            if install and group is not None and _update_ours(doc, event, tool, group,
                                                               setup, kept):
                continue
            if removed is not None:
                removed.extend(_places_of_ours(doc, event, tool))
            _remove_hooks(doc, event, tool, keep)
            if install and group is not None:
                if doc.node(["hooks", event]) is None:
                    created.append(("hooks", event))
                carried: list[str] = []
                doc.append(["hooks", event], _with_edits(group, edits, setup, carried))
                if carried:
                    kept += carried
                    added.append(event)
        if record is not None and install:
            record.note_install(name, created=old is None, containers=created,
                                empties=doc.filled)
        elif record is not None:
            record.note_uninstall(name)
        if record is not None:  # a re-install --no-wake empties "Stop": [ ] too
            doc.restore_empty(record.empty_texts(name))
        if kept and notes is not None:
            notes.append(kept_note(name, kept, added))
        if install and wrapper:
            for key, value in wrapper.items():
                doc.set([key], value)
        if doc.text == (old or ""):
            return old
        return doc.text if install else doc.result(remove_empty=_may_remove(setup, name))
    return transform


def _may_remove(setup: Setup, name: str) -> bool:
    """Whether uninstall may remove ``name`` when nothing is left in it: only when the
    record says an install created it."""
    return setup.record is not None and setup.record.may_remove_file(name)


def settings_transform(setup: Setup, tool: str, name: str, *, install: bool,
                       notes: list[str] | None = None, strict: bool = True
                       ) -> Callable[[str | None], str | None]:
    """A ``settings.json`` holding both the hook groups and ``mcpServers`` (Gemini CLI, Qwen
    Code): our hooks, and with ``setup.mcp`` (or on uninstall) our MCP server, in one write.
    ``strict=False``: the file is JSONC (comments and trailing commas kept)."""
    hooks = hooks_transform(setup, tool, name, install=install, notes=notes, strict=strict)
    entry = {"command": setup.ssa, "args": setup.mcp_args()}
    mcp = (mcp_json_transform(setup, name, ["mcpServers"], entry, install=install,
                              strict=strict, notes=notes)
           if setup.mcp or not install else None)

    def both(old: str | None) -> str | None:
        new = hooks(old)
        return mcp(new) if mcp is not None else new
    return both


# --- MCP server entries -------------------------------------------------------------

def _mcp_merge(current: dict[str, Any], entry: dict[str, Any], setup: Setup
               ) -> tuple[dict[str, Any], list[str]]:
    """What of our MCP entry a re-install changes (``command`` list: OpenCode's form)."""
    if isinstance(entry.get("command"), list):
        return merge_entry(current, entry, {"command": 2}, setup.explicit)
    return merge_entry(current, entry, {"args": 1}, setup.explicit,
                       replace=frozenset({"command"}))


def mcp_json_transform(setup: Setup, name: str, key_path: list[str], entry: Any,
                        *, install: bool, strict: bool, notes: list[str] | None = None
                        ) -> Callable[[str | None], str | None]:
    """``key_path + ["ssa"]`` holds our MCP entry (JSON or JSONC settings file).

    A re-install changes only our keys of it (:mod:`actors.agents.installmerge`): an
    ``env`` or other key the person added stays, and so does their edit of ours."""
    def transform(old: str | None) -> str | None:
        doc = Doc(old, name, strict=strict)
        servers = doc.node(key_path)
        if servers is not None and servers.kind != "object":
            raise ConfigRefused(f"{name}: \"{'.'.join(key_path)}\" is not an object; "
                                "not changed")
        current = doc.value([*key_path, MCP_NAME])
        if current is not None and not is_our_mcp_entry(current):
            if not install:
                return old  # someone else's server of that name: left alone, as installed
            raise ConfigRefused(f"{name}: an MCP server named \"{MCP_NAME}\" that is not "
                                "ours is already there; not changed")
        record = setup.record
        missing = [tuple(key_path[:depth]) for depth in range(1, len(key_path) + 1)
                   if doc.node(key_path[:depth]) is None]
        if not install and record is not None:
            record.note_uninstall(name)
        if install and current is None:
            doc.set([*key_path, MCP_NAME], entry)
        elif install:
            changes, kept = _mcp_merge(current, entry, setup)
            for key, value in changes.items():
                doc.set_member([*key_path, MCP_NAME], key, value)
            if kept and notes is not None:
                notes.append(kept_note(name, kept))
        elif current is not None:
            doc.remove([*key_path, MCP_NAME], prune=len(key_path),
                       keep=record.keeps(name) if record is not None else None)
        if install and record is not None:
            record.note_install(name, created=old is None, containers=missing,
                                empties=doc.filled)
        if record is not None:
            doc.restore_empty(record.empty_texts(name))
        if doc.text == (old or ""):
            return old
        return doc.text if install else doc.result(remove_empty=_may_remove(setup, name))
    return transform


def toml_transform(setup: Setup, name: str, *, install: bool, notes: list[str] | None = None,
                   trust_keys: Callable[[], list[str]] | None = None
                   ) -> Callable[[str | None], str | None]:
    """``[mcp_servers.ssa]`` in Codex's ``config.toml`` (:mod:`actors.agents._toml_edit`).

    A re-install changes only ``command`` and our part of ``args``; the person's own
    keys in the table (``env``, ``startup_timeout_sec``, ...) stay. On uninstall,
    ``trust_keys()`` names the ``[hooks.state]`` records of our hooks, removed too."""
    def transform(old: str | None) -> str | None:
        if setup.record is not None and install:
            setup.record.note_install(name, created=old is None, containers=())
        elif setup.record is not None:
            setup.record.note_uninstall(name)
        if not install and old is not None and trust_keys is not None:
            old = _toml_edit.remove_hook_states(old, name, trust_keys())
        parsed = _toml_edit.parse(old or "", name)
        servers = parsed.get("mcp_servers", {})
        if not isinstance(servers, dict):
            raise ConfigRefused(f"{name}: mcp_servers is not a table; not changed")
        current = servers.get(MCP_NAME)
        if current is not None and not is_our_mcp_entry(current):
            if not install:
                return old  # someone else's server of that name: left alone
            raise ConfigRefused(f"{name}: an MCP server named \"{MCP_NAME}\" that is not "
                                "ours is already there; not changed")
        if install:
            wanted = {"command": setup.ssa, "args": setup.mcp_args()}
            if current is None:
                return _toml_edit.set_table(old, name, "mcp_servers", MCP_NAME, wanted)
            changes, kept = _mcp_merge(current, wanted, setup)
            if kept and notes is not None:
                notes.append(kept_note(name, kept))
            if not changes or old is None:
                return old
            return _toml_edit.update_keys(old, name, "mcp_servers", MCP_NAME, changes)
        if current is None or old is None:
            return old
        new = _toml_edit.remove_table(old, name, "mcp_servers", MCP_NAME)
        return new if new.strip() or not _may_remove(setup, name) else None
    return transform


# --- files we own whole (plugin, extension, plugin directory) ------------------------

def owned_file_transform(name: str, content: str | None, *, recognise: Callable[[str], bool]
                         ) -> Callable[[str | None], str | None]:
    """A file that is ours whole: write ``content`` (``None``: remove it).

    A file already there that ``recognise`` does not accept is refused.
    """
    def transform(old: str | None) -> str | None:
        if old is not None and not recognise(old):
            raise ConfigRefused(f"{name} exists and was not written by ssa; not changed "
                                "(move it away first)")
        return content
    return transform


_PLUGIN_ARGV = re.compile(r"^const HOOK_ARGV(?:: string\[\])? = (\[.*\])", re.MULTILINE)


def plugin_transform(name: str, template: str, setup: Setup, tool: str, *, install: bool,
                     notes: list[str] | None = None) -> Callable[[str | None], str | None]:
    """Our plugin/extension file (ours whole, :data:`MARKER` first): rendered from
    ``template``; on a re-install the hook's argument vector in the file is merged
    (:func:`actors.agents.installmerge.merge_argv`), so an edit like ``--scope all``
    stays. A file of that name that is not ours is refused."""
    def transform(old: str | None) -> str | None:
        if old is not None and not has_marker(old):
            raise ConfigRefused(f"{name} exists and was not written by ssa; not changed "
                                "(move it away first)")
        if not install:
            return None
        argv = setup.hook_argv(tool)
        found = _PLUGIN_ARGV.search(old) if old is not None else None
        if found is not None:
            try:
                existing = json.loads(found.group(1))
            except ValueError:
                existing = None
            if isinstance(existing, list) and all(isinstance(t, str) for t in existing):
                argv, kept = merge_argv(existing, argv, HOOK_HEAD, setup.explicit)
                if kept and notes is not None:
                    notes.append(kept_note(name, kept))
        return render_plugin(template, setup, tool, argv=argv)
    return transform


def has_marker(text: str) -> bool:
    """Whether a plugin/extension file is ours (its first line starts with ``MARKER``)."""
    return text.startswith(MARKER)


def data_text(package: str, name: str) -> str:
    """The text of the template ``name`` shipped in ``package`` (a tool's package; UTF-8)."""
    return importlib.resources.files(package).joinpath(name).read_text("utf-8")


def render_plugin(template: str, setup: Setup, tool: str, argv: list[str] | None = None) -> str:
    """A plugin/extension template with the hook's argument vector (``argv``, else the
    set-up's) filled in."""
    rendered = json.dumps(setup.hook_argv(tool) if argv is None else argv)
    header = f"{MARKER} written by `ssa install {tool}`; `ssa uninstall {tool}` removes it.\n"
    return header + template.replace('["__SSA_HOOK_ARGV__"]', rendered).replace(
        "__SSA_HOOK_TIMEOUT_MS__", str(HOOK_TIMEOUT_S * 1000))
