"""Coding agents as watchers: notices delivered into a manager agent's next turn.

* ``ssa hook <tool>`` (:mod:`actors.agents.hook`) is what Claude Code,
  Codex, OpenCode and Pi run at each prompt. It imports only the standard
  library, APSW and the light modules of this package and of
  :mod:`persistence` until it knows there is work, so a prompt with nothing
  pending costs about a Python start: its command line, plan and budget
  (:mod:`~actors.agents.hookargs`, :mod:`~actors.agents.hookplan`,
  :mod:`~actors.agents.hookbudget`) are as light; the warm path
  (:mod:`~actors.agents.hookwarm`) is imported only when there is work.
* ``ssa install`` / ``ssa uninstall`` (:mod:`actors.agents.install`) write
  each tool's hook, plugin or extension and MCP configuration (the set-up
  and the tools' locations in :mod:`~actors.agents.installsetup`, the edits
  in :mod:`~actors.agents.installedits`, which files change how in
  :mod:`~actors.agents.installplan`).
* ``ssa mcp`` (:mod:`actors.agents.mcp_server`) serves the gateway's tools
  to the agents over stdio.
* ``ssa watches`` (:mod:`actors.agents.watches`) lists, adds and removes a
  watcher's watches.

This package imports nothing at import time; the command handlers import
its modules lazily. May import: the facade through :mod:`actors`, the
upstream service (:mod:`actors.monitors`, to adopt), the readers
(:mod:`actors.upstream`), :mod:`actors.errors` and :mod:`persistence`'s public
names; never the command line (:mod:`actors.cli`) or the test kit.
"""
