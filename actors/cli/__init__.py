"""The ``ssa`` command line.

What lives here: the entry point (:mod:`actors.cli.command`, which sends
``ssa hook`` down a light path), the argument parser and commands
(:mod:`actors.cli.app`), ``ssa watch`` (:mod:`actors.cli.watch`), the demo and
the bounded pool of ``--exec`` commands.

May import everything below it: the facade (through :mod:`actors`), the
monitors, the upstream readers, the agent integrations and :mod:`persistence`'s
public names. Nothing imports the command line except ``ssa_cli`` and ``python -m actors``
(:mod:`actors.__main__`).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import Any

    from actors.cli.app import main

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    """``main`` on first use (keeps ``import actors.cli.command`` light).

    Raises:
        AttributeError: any other name.
    """
    if name == "main":
        from actors.cli.app import main as app_main  # noqa: PLC0415 -- start-up cost of ssa hook

        return app_main
    raise AttributeError(name)
