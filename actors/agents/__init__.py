"""Coding agents as watchers: notices delivered into a manager agent's next turn.

``ssa hook <tool>`` (:mod:`actors.agents.hook`) is what Claude Code, Codex,
OpenCode and Pi run at each prompt. It imports only the standard library,
APSW and the light modules of this package and of :mod:`persistence` until
it knows there is work, so a prompt with nothing pending costs about a
Python start. This package imports nothing at import time.
"""
