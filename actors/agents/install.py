"""``ssa install/uninstall <tool>``: put ``ssa hook`` and ``ssa mcp`` where each tool reads them.

What each install writes (``docs/agents-install.md`` has the full text):

* ``claude-code``: a ``UserPromptSubmit`` and a ``SessionStart`` command
  hook in ``~/.claude/settings.json`` (``$CLAUDE_CONFIG_DIR/settings.json``;
  ``--project``: ``.claude/settings.json``) and ``mcpServers.ssa`` in
  ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json``; ``--project``:
  ``.mcp.json``); ``--plugin DIR`` writes a plugin and a one-plugin
  marketplace instead.
* ``codex``: the two hooks in ``$CODEX_HOME/hooks.json`` (``~/.codex``;
  ``--project``: ``.codex/hooks.json``) and ``[mcp_servers.ssa]`` in
  ``config.toml`` beside it.
* ``opencode``: the plugin ``ssa.js`` in ``$XDG_CONFIG_HOME/opencode/plugins``
  (``--project``: ``.opencode/plugins``) and ``mcp.ssa`` in the global
  ``opencode.json`` (``--project``: the project's).
* ``pi``: the extension ``ssa.ts`` in ``$PI_CODING_AGENT_DIR/extensions``
  (``~/.pi/agent``; ``--project``: ``.pi/extensions``). Pi has no MCP client.

Our entries are recognised by what they run, never by position: a hook whose
command is ``<path>/ssa hook <tool>``, an MCP server named ``ssa`` that runs
``<path>/ssa mcp``, a plugin or extension file whose first line is
:data:`MARKER`. Files go through :mod:`actors.agents._files` (locks, atomic
replace, backups, modes). Runs on the caller's thread; blocks on the file
system.
"""

from __future__ import annotations

import argparse
import importlib.resources
import importlib.util
import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from actors.agents import _toml_edit
from actors.agents._files import BACKUP_SUFFIX, ConfigRefused, FileOp, apply_changes, diff
from actors.agents._json_ops import Doc
from actors.agents.hookinput import TOOLS as _HOOK_TOOLS

__all__ = ["HOOK_TIMEOUT_S", "MARKER", "TOOLS", "Setup", "plan", "run"]

TOOLS = tuple(_HOOK_TOOLS)
"""The coding agents this module configures."""

HOOK_TIMEOUT_S = 10
"""Seconds each tool gives ``ssa hook`` before it gives up (well under Claude Code's 30 s)."""

MARKER = "// ssa-managed:"
"""The first line of every plugin/extension file we write starts with this."""

MCP_NAME = "ssa"
"""The MCP server's name in every tool's configuration."""

PLUGIN_NAME = "ssa"
MARKETPLACE_NAME = "ssa-local"


@dataclass(frozen=True)
class Setup:
    """Everything one install needs, resolved up front.

    ``ssa`` is the absolute path of the ``ssa`` script the hooks run; ``db``
    the ``--db`` to pass on (absolute, or a URL); ``project`` the directory
    for ``--project`` (else ``None``: the person's own configuration);
    ``home`` and ``env`` stand for ``Path.home()`` and ``os.environ``.
    """

    ssa: str
    db: str | None
    project: Path | None
    home: Path
    env: Mapping[str, str]
    mcp: bool = True
    scope: str = "project"

    def hook_command(self, tool: str) -> str:
        """The shell command line a tool's hook runs."""
        return shlex.join(self.hook_argv(tool))

    def hook_argv(self, tool: str) -> list[str]:
        """The same as an argument vector (for the plugin and the extension)."""
        scope = [] if self.scope == "project" else ["--scope", self.scope]
        return [self.ssa, "hook", tool, *self.db_args(), *scope]

    def mcp_args(self) -> list[str]:
        """The arguments of ``ssa`` that start the MCP server."""
        return ["mcp", *self.db_args()]

    def db_args(self) -> list[str]:
        """``["--db", db]`` when a database was named."""
        return [] if self.db is None else ["--db", self.db]

    def env_dir(self, name: str, default: Path) -> Path:
        """``$name`` when set and non-empty, else ``default``."""
        value = self.env.get(name, "")
        return Path(value).expanduser() if value else default


# --- recognising our entries -------------------------------------------------------

def _is_ssa_path(command: object) -> bool:
    return isinstance(command, str) and os.path.basename(command).startswith("ssa")


def is_our_hook_command(command: object, tool: str) -> bool:
    """Whether a hook's command line runs ``<dir>/ssa hook <tool>``."""
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
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
"""Both tools: every prompt, and every session start (startup, resume, clear, compact)."""


def hook_groups(setup: Setup, tool: str) -> dict[str, dict[str, Any]]:
    """The matcher group we put under each event (no matcher: every source)."""
    handler = {"type": "command", "command": setup.hook_command(tool),
               "timeout": HOOK_TIMEOUT_S}
    return {event: {"hooks": [dict(handler)]} for event in HOOK_EVENTS}


def _our_hook(tool: str) -> Callable[[Any], bool]:
    return lambda hook: isinstance(hook, dict) and is_our_hook_command(hook.get("command"), tool)


def _count_ours(doc: Doc, event: str, tool: str) -> list[Any]:
    groups = doc.value(["hooks", event])
    if not isinstance(groups, list):
        return []
    ours = _our_hook(tool)
    return [g for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            and any(ours(h) for h in g["hooks"])]


def _remove_hooks(doc: Doc, event: str, tool: str) -> None:
    """Remove our handlers of ``event``; a group left with none goes too, and so on up."""
    ours = _our_hook(tool)
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
                doc.remove(["hooks", event, gi], prune=2)
            else:
                doc.remove(["hooks", event, gi, "hooks", hit])
            break
        else:
            return


def hooks_transform(setup: Setup, tool: str, name: str, *, install: bool,
                    wrapper: dict[str, Any] | None = None
                    ) -> Callable[[str | None], str | None]:
    """The settings file's change: our two hook groups in, or out.

    ``wrapper`` (a plugin's ``hooks.json``) are extra top-level keys of a file we own.
    """
    def transform(old: str | None) -> str | None:
        doc = Doc(old, name, strict=True)
        hooks = doc.node(["hooks"])
        if hooks is not None and hooks.kind != "object":
            raise ConfigRefused(f"{name}: \"hooks\" is not an object; not changed")
        for event, group in hook_groups(setup, tool).items():
            present = _count_ours(doc, event, tool)
            if install and present == [group]:
                continue  # already there, exactly
            _remove_hooks(doc, event, tool)
            if install:
                doc.append(["hooks", event], group)
        if install and wrapper:
            for key, value in wrapper.items():
                doc.set([key], value)
        if doc.text == (old or ""):
            return old
        return doc.result() if not install else doc.text
    return transform


# --- MCP server entries -------------------------------------------------------------

def _mcp_json_transform(setup: Setup, name: str, key_path: list[str], entry: Any,
                        *, install: bool, strict: bool) -> Callable[[str | None], str | None]:
    """``key_path + ["ssa"]`` holds our MCP entry (JSON or JSONC settings file)."""
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
        if install:
            if current != entry:
                doc.set([*key_path, MCP_NAME], entry)
        elif current is not None:
            doc.remove([*key_path, MCP_NAME], prune=len(key_path))
        if doc.text == (old or ""):
            return old
        return doc.result() if not install else doc.text
    return transform


def _toml_transform(setup: Setup, name: str, *, install: bool
                    ) -> Callable[[str | None], str | None]:
    """``[mcp_servers.ssa]`` in Codex's ``config.toml`` (:mod:`actors.agents._toml_edit`)."""
    def transform(old: str | None) -> str | None:
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
            if current == wanted:
                return old
            return _toml_edit.set_table(old, name, "mcp_servers", MCP_NAME, wanted)
        if current is None or old is None:
            return old
        new = _toml_edit.remove_table(old, name, "mcp_servers", MCP_NAME)
        return new if new.strip() else None
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


def _has_marker(text: str) -> bool:
    return text.startswith(MARKER)


def _data_text(name: str) -> str:
    return importlib.resources.files("actors.agents").joinpath("data", name).read_text("utf-8")


def render_plugin(template: str, setup: Setup, tool: str) -> str:
    """A plugin/extension template with the hook's argument vector filled in."""
    argv = json.dumps(setup.hook_argv(tool))
    header = f"{MARKER} written by `ssa install {tool}`; `ssa uninstall {tool}` removes it.\n"
    return header + template.replace('["__SSA_HOOK_ARGV__"]', argv).replace(
        "__SSA_HOOK_TIMEOUT_MS__", str(HOOK_TIMEOUT_S * 1000))


# --- where each tool reads its configuration ----------------------------------------

def claude_dir(setup: Setup) -> Path:
    """``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    return setup.env_dir("CLAUDE_CONFIG_DIR", setup.home / ".claude")


def claude_state_file(setup: Setup) -> Path:
    """User-scope MCP servers: ``$CLAUDE_CONFIG_DIR/.claude.json`` or ``~/.claude.json``."""
    if setup.env.get("CLAUDE_CONFIG_DIR"):
        return claude_dir(setup) / ".claude.json"
    return setup.home / ".claude.json"


def codex_home(setup: Setup) -> Path:
    """``$CODEX_HOME`` or ``~/.codex``."""
    return setup.env_dir("CODEX_HOME", setup.home / ".codex")


def opencode_config_dir(setup: Setup) -> Path:
    """``$XDG_CONFIG_HOME/opencode`` or ``~/.config/opencode``."""
    return setup.env_dir("XDG_CONFIG_HOME", setup.home / ".config") / "opencode"


def opencode_config_file(setup: Setup) -> Path:
    """The ``opencode.json`` to edit: the first that exists in OpenCode's own order, else
    ``opencode.json`` (global: ``opencode.jsonc``, ``opencode.json``, ``config.json``;
    project: ``opencode.json``, ``opencode.jsonc``, ``.opencode/opencode.json(c)``)."""
    if setup.project is not None:
        candidates = [setup.project / n for n in ("opencode.json", "opencode.jsonc")] + [
            setup.project / ".opencode" / n for n in ("opencode.json", "opencode.jsonc")]
        default = setup.project / "opencode.json"
    else:
        base = opencode_config_dir(setup)
        candidates = [base / n for n in ("opencode.jsonc", "opencode.json", "config.json")]
        default = base / "opencode.json"
    return next((c for c in candidates if c.is_file()), default)


def pi_agent_dir(setup: Setup) -> Path:
    """``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``."""
    return setup.env_dir("PI_CODING_AGENT_DIR", setup.home / ".pi" / "agent")


# --- the plan: which files change how ----------------------------------------------

@dataclass(frozen=True)
class Plan:
    """The file operations of one install/uninstall and the lines to tell the person after."""

    ops: list[FileOp]
    notes: list[str]


def _mcp_available() -> bool:
    return importlib.util.find_spec("mcp") is not None


def plan(tool: str, setup: Setup, *, install: bool, plugin_dir: Path | None = None) -> Plan:
    """The file operations for ``tool`` (see the module docstring for what goes where)."""
    notes: list[str] = []
    if tool == "claude-code":
        return _plan_claude(setup, install, plugin_dir, notes)
    if plugin_dir is not None:
        raise ConfigRefused("--plugin is for claude-code only")
    ops: list[FileOp] = []
    if tool == "codex":
        base = setup.project / ".codex" if setup.project is not None else codex_home(setup)
        hooks = base / "hooks.json"
        ops.append(FileOp(hooks, hooks_transform(setup, tool, str(hooks), install=install),
                          "UserPromptSubmit and SessionStart hooks"))
        if setup.mcp or not install:
            config = base / "config.toml"
            ops.append(FileOp(config, _toml_transform(setup, str(config), install=install),
                              f"MCP server [mcp_servers.{MCP_NAME}]"))
        if install:
            notes.append("Codex asks you to trust new hooks: start codex, run /hooks, and "
                         "trust the two ssa hooks (UserPromptSubmit, SessionStart).")
            if setup.project is not None:
                notes.append("Project hooks and config load only in a project Codex trusts.")
    elif tool == "opencode":
        base = (setup.project / ".opencode" if setup.project is not None
                else opencode_config_dir(setup))
        plugin = base / "plugins" / "ssa.js"
        content = render_plugin(_data_text("opencode_plugin.js"), setup, tool) if install \
            else None
        ops.append(FileOp(plugin, owned_file_transform(str(plugin), content,
                                                       recognise=_has_marker),
                          "plugin (experimental.chat.system.transform)", owned=True))
        if setup.mcp or not install:
            config = opencode_config_file(setup)
            entry = {"type": "local", "command": [setup.ssa, *setup.mcp_args()],
                     "enabled": True}
            ops.append(FileOp(config, _mcp_json_transform(
                setup, str(config), ["mcp"], entry, install=install, strict=False),
                f"MCP server mcp.{MCP_NAME}"))
    elif tool == "pi":
        base = (setup.project / ".pi" / "extensions" if setup.project is not None
                else pi_agent_dir(setup) / "extensions")
        extension = base / "ssa.ts"
        content = render_plugin(_data_text("pi_extension.ts"), setup, tool) if install \
            else None
        ops.append(FileOp(extension, owned_file_transform(str(extension), content,
                                                          recognise=_has_marker),
                          "extension (before_agent_start)", owned=True))
        if install:
            notes.append("Pi has no built-in MCP client: no MCP server registered (the "
                         "notice's session_status is `ssa status KEY --changes-since N` "
                         "from a shell).")
    else:
        raise ConfigRefused(f"unknown tool {tool!r} (one of {', '.join(TOOLS)})")
    return Plan(ops, notes)


def _plan_claude(setup: Setup, install: bool, plugin_dir: Path | None,
                 notes: list[str]) -> Plan:
    tool = "claude-code"
    entry = {"type": "stdio", "command": setup.ssa, "args": setup.mcp_args(), "env": {}}
    if plugin_dir is not None:
        return _plan_claude_plugin(setup, install, plugin_dir.resolve(), notes)
    ops: list[FileOp] = []
    if setup.project is not None:
        settings = setup.project / ".claude" / "settings.json"
        mcp_file, key_path = setup.project / ".mcp.json", ["mcpServers"]
    else:
        settings = claude_dir(setup) / "settings.json"
        mcp_file, key_path = claude_state_file(setup), ["mcpServers"]
    ops.append(FileOp(settings, hooks_transform(setup, tool, str(settings), install=install),
                      "UserPromptSubmit and SessionStart hooks"))
    if setup.mcp or not install:
        ops.append(FileOp(mcp_file, _mcp_json_transform(
            setup, str(mcp_file), key_path, entry, install=install, strict=True),
            f"MCP server mcpServers.{MCP_NAME}"))
    if install and setup.project is not None:
        notes.append("Claude Code asks once to approve a project's .mcp.json servers, and "
                     "runs a project's hooks only after its workspace-trust dialog.")
    return Plan(ops, notes)


def _plan_claude_plugin(setup: Setup, install: bool, root: Path, notes: list[str]) -> Plan:
    """A marketplace directory holding one plugin: ``root/plugins/ssa``."""
    tool = "claude-code"
    plugin = root / "plugins" / PLUGIN_NAME
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        plugin_version = version("session-state-awareness")
    except PackageNotFoundError:
        plugin_version = "0.0.0"

    def owned_json(path: Path, value: Any, what: str,
                   recognise: Callable[[Any], bool]) -> FileOp:
        content = json.dumps(value, indent=2) + "\n" if install else None

        def ours(text: str) -> bool:
            try:
                return recognise(json.loads(text))
            except ValueError:
                return False
        return FileOp(path, owned_file_transform(str(path), content, recognise=ours), what,
                      owned=True)

    description = ("Tells this session when someone else steps into another session of "
                   "the project (session-state-awareness).")
    marketplace = {"name": MARKETPLACE_NAME, "owner": {"name": "session-state-awareness"},
                   "description": "The ssa plugin of this installation of "
                                  "session-state-awareness (written by ssa install).",
                   "plugins": [{"name": PLUGIN_NAME, "source": f"./plugins/{PLUGIN_NAME}",
                                "description": description}]}
    manifest = {"name": PLUGIN_NAME, "version": plugin_version, "description": description,
                "author": {"name": "session-state-awareness"}}
    hooks = {"description": "ssa: pending session-state notices into each turn",
             "hooks": {event: [group] for event, group in hook_groups(setup, tool).items()}}
    mcp = {"mcpServers": {MCP_NAME: {"command": setup.ssa, "args": setup.mcp_args()}}}

    def named(name: str) -> Callable[[Any], bool]:
        return lambda v: isinstance(v, dict) and v.get("name") == name

    def has_our_hooks(v: Any) -> bool:
        groups = v.get("hooks", {}).get("UserPromptSubmit") if isinstance(v, dict) else None
        return isinstance(groups, list) and any(
            _our_hook(tool)(h) for g in groups if isinstance(g, dict)
            for h in g.get("hooks", []))

    def has_our_mcp(v: Any) -> bool:
        return isinstance(v, dict) and is_our_mcp_entry(v.get("mcpServers", {}).get(MCP_NAME))

    ops = [
        owned_json(root / ".claude-plugin" / "marketplace.json", marketplace,
                   "marketplace manifest", named(MARKETPLACE_NAME)),
        owned_json(plugin / ".claude-plugin" / "plugin.json", manifest, "plugin manifest",
                   named(PLUGIN_NAME)),
        owned_json(plugin / "hooks" / "hooks.json", hooks,
                   "UserPromptSubmit and SessionStart hooks", has_our_hooks),
    ]
    if setup.mcp or not install:
        ops.append(owned_json(plugin / ".mcp.json", mcp, f"MCP server {MCP_NAME}",
                              has_our_mcp))
    if install:
        notes += [
            "Install the plugin in Claude Code (user scope):",
            f"  claude plugin marketplace add {shlex.quote(str(root))}",
            f"  claude plugin install {PLUGIN_NAME}@{MARKETPLACE_NAME}",
            f"or load it for one session: claude --plugin-dir {shlex.quote(str(plugin))}",
        ]
    else:
        notes += [f"If it is installed in Claude Code: claude plugin uninstall "
                  f"{PLUGIN_NAME}@{MARKETPLACE_NAME} && claude plugin marketplace remove "
                  f"{MARKETPLACE_NAME}"]
    return Plan(ops, notes)


# --- the command --------------------------------------------------------------------

def resolve_ssa(explicit: str | None, argv0: str | None = None) -> str:
    """The absolute path of the ``ssa`` script the installed hooks run.

    ``--ssa PATH`` when given; else the running script when it is the ``ssa``
    entry point; else ``ssa`` on ``PATH``.

    Raises:
        ConfigRefused: no ``ssa`` found, or ``--ssa`` is not an executable file.
    """
    if explicit is not None:
        path = Path(explicit).expanduser().absolute()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ConfigRefused(f"--ssa {explicit}: not an executable file")
        return str(path)
    running = Path(argv0 if argv0 is not None else sys.argv[0])
    if running.name == "ssa" and running.is_file():
        return str(running.absolute())
    found = shutil.which("ssa")
    if found is None:
        raise ConfigRefused("cannot find the ssa command (not run as ssa, none on PATH): "
                            "pass --ssa PATH")
    return str(Path(found).absolute())


def _setup_from(args: argparse.Namespace, install: bool) -> Setup:
    db = getattr(args, "db", None)
    if db is not None and "://" not in db:
        db = str(Path(db).expanduser().absolute())
    ssa = resolve_ssa(getattr(args, "ssa", None)) if install else "ssa"
    mcp = install and not getattr(args, "no_mcp", False)
    return Setup(ssa=ssa, db=db, project=Path.cwd() if args.project else None,
                 home=Path.home(), env=os.environ, mcp=mcp,
                 scope=getattr(args, "scope", None) or "project")


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Run ``ssa install`` (``args.command == "install"``) or ``ssa uninstall``.

    Returns:
        0 done (or nothing to do); 2 refused (one line on ``err``, nothing
        written); 1 a file could not be written (one line on ``err``).
    """
    install = args.command == "install"
    try:
        setup = _setup_from(args, install)
        notes: list[str] = []
        if install and setup.mcp and args.tool != "pi" and not _mcp_available():
            setup = Setup(setup.ssa, setup.db, setup.project, setup.home, setup.env, mcp=False,
                          scope=setup.scope)
            notes.append("MCP server not registered: it needs the mcp extra "
                         "(python -m pip install 'session-state-awareness[mcp]'), then run "
                         f"ssa install {args.tool} again.")
        the_plan = plan(args.tool, setup, install=install, plugin_dir=args.plugin)
        changes = apply_changes(the_plan.ops, dry_run=args.dry_run)
    except ConfigRefused as exc:
        err.write(f"ssa: {exc}\n")
        return 2
    except OSError as exc:
        err.write(f"ssa: {exc}\n")
        return 1
    verb = "install" if install else "uninstall"
    for op, change in zip(the_plan.ops, changes, strict=True):
        if args.dry_run:
            if change.changed:
                out.write(diff(change))
            else:
                out.write(f"unchanged: {change.path} ({change.what})\n")
            continue
        if not change.changed:
            state = "already installed" if install else "not installed"
            out.write(f"{state}: {change.what} in {change.path}\n")
        elif change.after is None:
            out.write(f"removed {change.path} ({change.what})\n")
        else:
            action = "wrote" if change.before is None else "updated"
            backup = ("" if change.before is None or op.owned
                      else f"; backup {change.path}{BACKUP_SUFFIX}")
            label = "installed" if install else "uninstalled"
            out.write(f"{action} {change.path} ({change.what} {label}{backup})\n")
    if args.dry_run:
        out.write(f"dry run: nothing written (ssa {verb} {args.tool} without --dry-run "
                  "writes it)\n")
    for note in notes + the_plan.notes:
        out.write(note + "\n")
    return 0
