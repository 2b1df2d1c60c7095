"""Which project a working directory belongs to: its git repository, worktrees included.

Two sessions are of the same project when their working directories are in
the same git repository (any of its worktrees, or a sub-directory of one),
or, outside any repository, when they are the same directory. Read from
the file system only (no ``git`` process): a prompt hook pays a few
``stat`` calls, not a fork.
"""

from __future__ import annotations

import os

__all__ = ["project_of", "project_roots"]

_MAX_DEPTH = 64
"""Directories walked up at most while looking for ``.git``."""


def project_of(cwd: str) -> str:
    """The project identity of the directory ``cwd``.

    Args:
        cwd: an absolute directory path (it need not exist any more).

    Returns:
        ``"git:<common dir>"`` (the real path of the repository's shared
        ``.git`` directory: the same for every worktree) inside a git
        repository, else ``"dir:<real path of cwd>"``.

    Any thread; blocks on a few ``stat`` and small file reads; never raises.
    """
    try:
        start = os.path.realpath(cwd)
    except (OSError, ValueError):
        return f"dir:{cwd}"
    directory = start
    for _ in range(_MAX_DEPTH):
        common = _common_dir(os.path.join(directory, ".git"))
        if common is not None:
            return f"git:{common}"
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return f"dir:{start}"


def project_roots(cwd: str) -> list[str]:
    """The directories where a project's own session files live, for ``cwd`` in it.

    For a source with no standard location (Aider's history, Crush's store are
    files in the repository), the hook looks in these: ``cwd``, the work
    tree's root (the directory holding ``.git``), and the main work tree of a
    linked worktree (the parent of the shared ``.git`` directory); real paths,
    each once, in that order.

    Args:
        cwd: an absolute directory path (it need not exist any more).

    Returns:
        The directories (``[cwd]`` outside a repository). Any thread; blocks
        on a few ``stat`` and small file reads; never raises.
    """
    try:
        start = os.path.realpath(cwd)
    except (OSError, ValueError):
        return [cwd]
    roots = [start]
    directory = start
    for _ in range(_MAX_DEPTH):
        common = _common_dir(os.path.join(directory, ".git"))
        if common is not None:
            roots.append(directory)
            if os.path.basename(common) == ".git":
                roots.append(os.path.dirname(common))
            break
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return list(dict.fromkeys(roots))


def _common_dir(dot_git: str) -> str | None:
    """The shared git directory that ``dot_git`` (a ``.git`` dir or file) belongs to."""
    try:
        if os.path.isdir(dot_git):
            return _resolve_common(dot_git)
        if not os.path.isfile(dot_git):
            return None
        with open(dot_git, encoding="utf-8", errors="replace") as file:
            first = file.read(4096).splitlines()[:1]
    except (OSError, ValueError):
        return None
    if not first or not first[0].startswith("gitdir:"):
        return None
    gitdir = first[0][len("gitdir:"):].strip()
    if not os.path.isabs(gitdir):
        gitdir = os.path.join(os.path.dirname(dot_git), gitdir)
    return _resolve_common(gitdir)


def _resolve_common(gitdir: str) -> str:
    """A worktree's git directory names the shared one in its ``commondir`` file."""
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8",
                  errors="replace") as file:
            common = file.read(4096).strip()
    except (OSError, ValueError):
        return os.path.realpath(gitdir)
    if not os.path.isabs(common):
        common = os.path.join(gitdir, common)
    return os.path.realpath(common)
