"""Which files one ``ssa install`` / ``ssa uninstall`` of a tool changes, and how.

What lives here: :func:`plan`, from a tool and a
:class:`~actors.agents.installsetup.Setup` to the :class:`Plan`'s file
operations (each a transform of :mod:`actors.agents.installedits`) and the
lines to tell the person after. Each tool's own plan is its package's
``install`` module (:mod:`actors.agents.tools`); this module names no tool.
Writes nothing: :func:`apply` (:func:`actors.agents._files.apply_changes`) does.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from pathlib import Path

from actors.agents._files import Change, ConfigRefused, FileOp, apply_changes
from actors.agents.installrecord import InstallRecord, record_path
from actors.agents.installsetup import Setup
from actors.agents.tools import TOOLS, tool_named

__all__ = ["ConfigRefused", "Plan", "apply", "plan"]


@dataclass(frozen=True)
class Plan:
    """The file operations of one install/uninstall and the lines to tell the person after."""

    ops: list[FileOp]
    notes: list[str]


def plan(tool: str, setup: Setup, *, install: bool, plugin_dir: Path | None = None) -> Plan:
    """The file operations for ``tool``: its package's ``install`` module says which.

    Raises:
        ConfigRefused: an unknown tool, or ``--plugin`` for a tool without one.
    """
    found = tool_named(tool)
    if found is None:
        raise ConfigRefused(f"unknown tool {tool!r} (one of {', '.join(TOOLS)})")
    if plugin_dir is not None and not found.plugin_dir:
        raise ConfigRefused(f"--plugin is not for {tool}")
    module = importlib.import_module(found.install)
    record = InstallRecord.load(record_path(setup.home, setup.env))
    setup = dataclasses.replace(setup, record=record)
    result: Plan = module.plan(setup, install=install, plugin_dir=plugin_dir)
    ops = result.ops
    if not install:  # uninstall takes the backups of the install with it and makes none
        ops = [dataclasses.replace(op, drop_backup=True) for op in ops]
    # Last: the transforms above note into the record as they run.
    ops = [*ops, FileOp(record.path, record.transform, "ssa's install record", owned=True,
                        quiet=True)]
    return Plan(ops, result.notes)


def apply(the_plan: Plan, *, dry_run: bool = False) -> list[Change]:
    """Write a plan's files (:func:`actors.agents._files.apply_changes`; caller's thread,
    blocks on the file system and the folders' locks).

    Returns:
        One change per file operation, in order.

    Raises:
        ConfigRefused: a file was refused (nothing written); OSError: a write failed.
    """
    return apply_changes(the_plan.ops, dry_run=dry_run)
