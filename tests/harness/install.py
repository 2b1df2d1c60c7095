"""Install the pinned coding-agent CLIs (``tests/agents``) into a shared cache.

``npm ci`` runs once per lock file: the cache directory is
``$SSA_AGENTS_DIR`` when set, else ``$XDG_CACHE_HOME/ssa-agents/<hash>`` (or
``~/.cache/ssa-agents/<hash>``), where ``<hash>`` is the first 16 hex digits
of the SHA-256 of ``package-lock.json``; a lock that did not change reuses the
install. A directory is complete once it holds the marker file
(:data:`MARKER`); an install runs in a temporary sibling and is renamed into
place, so an interrupted ``npm ci`` never leaves a half-filled cache, and an
exclusive lock on ``<cache>.lock`` lets concurrent test runs share one install.

Command line: ``python -m tests.harness.install`` installs (or reuses) and
prints the ``node_modules/.bin`` directory; ``--check`` only says whether the
install is there (exit 1 when not).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["AGENTS_DIR", "MARKER", "AgentInstall", "InstallError", "cache_dir", "install",
           "installed", "lock_hash"]

log = logging.getLogger(__name__)

AGENTS_DIR = Path(__file__).resolve().parents[1] / "agents"
"""``tests/agents``: the ``package.json`` and ``package-lock.json`` that pin the four CLIs."""
MARKER = ".ssa-installed"
"""File written into a cache directory once ``npm ci`` succeeded there."""
NPM_TIMEOUT_S = 900.0
"""Longest ``npm ci`` may take, in seconds (a cold install downloads ~400 MB)."""

BINARIES = {"claude": "claude", "codex": "codex", "opencode": "opencode", "pi": "pi",
            "gemini": "gemini", "qwen": "qwen"}
"""Tool name -> executable name in ``node_modules/.bin``."""


class InstallError(RuntimeError):
    """The pinned CLIs could not be installed (the message holds npm's last output lines)."""


@dataclass(frozen=True)
class AgentInstall:
    """A complete install of the pinned CLIs.

    Attributes:
        root: the cache directory (holds ``node_modules``).
    """

    root: Path

    @property
    def bin_dir(self) -> Path:
        """``<root>/node_modules/.bin``: put it first on a tool's ``PATH``."""
        return self.root / "node_modules" / ".bin"

    def binary(self, tool: str) -> Path:
        """The executable of ``tool`` (``claude``, ``codex``, ``opencode``, ``pi``).

        Raises:
            KeyError: an unknown tool name.
        """
        return self.bin_dir / BINARIES[tool]


def lock_hash(agents_dir: Path = AGENTS_DIR) -> str:
    """The first 16 hex digits of the SHA-256 of ``agents_dir/package-lock.json``.

    Raises:
        OSError: the lock file cannot be read.
    """
    return hashlib.sha256((agents_dir / "package-lock.json").read_bytes()).hexdigest()[:16]


def cache_dir(agents_dir: Path = AGENTS_DIR) -> Path:
    """Where the install for this lock file lives (``$SSA_AGENTS_DIR`` wins); not created."""
    if os.environ.get("SSA_AGENTS_DIR"):
        return Path(os.environ["SSA_AGENTS_DIR"]).expanduser()
    base = (Path(os.environ["XDG_CACHE_HOME"]) if os.environ.get("XDG_CACHE_HOME")
            else Path.home() / ".cache")
    return base / "ssa-agents" / lock_hash(agents_dir)


def installed(agents_dir: Path = AGENTS_DIR) -> AgentInstall | None:
    """The complete install for this lock file, or ``None``; never installs, never blocks."""
    root = cache_dir(agents_dir)
    return AgentInstall(root) if (root / MARKER).is_file() else None


def install(agents_dir: Path = AGENTS_DIR, *, npm: str = "npm") -> AgentInstall:
    """Install the pinned CLIs with ``npm ci`` unless this lock file's install exists.

    Blocks the calling thread for the whole install (minutes when cold, a few
    milliseconds when cached) and while another process installs the same
    cache directory.

    Raises:
        InstallError: npm is missing, failed or took longer than :data:`NPM_TIMEOUT_S`.
    """
    found = installed(agents_dir)
    if found is not None:
        return found
    root = cache_dir(agents_dir)
    root.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(root.parent / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = installed(agents_dir)
        if found is not None:
            return found
        if shutil.which(npm) is None:
            raise InstallError(f"{npm} is not on PATH: install Node.js 20+ and npm")
        work = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
        try:
            for name in ("package.json", "package-lock.json"):
                shutil.copy2(agents_dir / name, work / name)
            _npm_ci(npm, work)
            (work / MARKER).write_text(lock_hash(agents_dir) + "\n")
            if root.exists():
                shutil.rmtree(root)
            work.rename(root)
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
    log.info("installed the pinned agent CLIs into %s", root)
    return AgentInstall(root)


def _npm_ci(npm: str, where: Path) -> None:
    """Run ``npm ci`` in ``where``; raises :class:`InstallError` with npm's output tail.

    A registry that lacks some platforms' optional binary packages (the mirror
    this project's machines use carries opencode's ``linux-x64`` builds only)
    yields a lock file without them, which ``npm ci`` refuses as out of sync
    ("Missing: opencode-darwin-arm64@ from lock file"). Then, and only then,
    ``npm install`` runs on the same lock and the lock it leaves must equal the
    committed one byte for byte: every version and integrity hash stays pinned.
    """
    locked = (where / "package-lock.json").read_bytes()
    done = _npm(npm, "ci", where)
    if done.returncode != 0 and "from lock file" in done.stdout + done.stderr:
        log.info("npm ci refused a lock without other platforms' optional packages; "
                 "running npm install on the same lock")
        done = _npm(npm, "install", where)
        if done.returncode == 0 and (where / "package-lock.json").read_bytes() != locked:
            raise InstallError("npm install changed package-lock.json: the lock in "
                               f"{AGENTS_DIR} is out of date (regenerate it with npm install)")
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise InstallError(f"npm {done.args[1]} failed (exit {done.returncode}):\n{tail}")


def _npm(npm: str, verb: str, where: Path) -> subprocess.CompletedProcess[str]:
    """Run ``npm <verb>`` quietly in ``where``, bounded by :data:`NPM_TIMEOUT_S`."""
    command = [npm, verb, "--no-audit", "--no-fund", "--loglevel=error"]
    try:
        return subprocess.run(command, cwd=where, capture_output=True, text=True,
                              timeout=NPM_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"{' '.join(command)} took longer than {NPM_TIMEOUT_S:.0f} s") from exc


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.harness.install [--check]``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m tests.harness.install",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true",
                        help="only report whether the install exists (exit 1 when not)")
    args = parser.parse_args(argv)
    if args.check:
        found = installed()
        sys.stdout.write(f"{found.bin_dir}\n" if found else f"not installed: {cache_dir()}\n")
        return 0 if found else 1
    try:
        done = install()
    except InstallError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    sys.stdout.write(f"{done.bin_dir}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
