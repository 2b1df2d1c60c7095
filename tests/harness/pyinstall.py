"""Install the pinned Python coding-agent CLIs (Aider) into a shared cache.

Aider is not an npm package: PyPI's ``aider-chat``. Its lock is
``tests/agents/aider-requirements.txt``, every distribution the pinned
``aider-chat`` resolved to, one ``name==version`` a line; it is installed with
``pip install --no-deps -r`` into a virtual environment of its own, so nothing
else is resolved at install time.

The environment lives in ``$SSA_AIDER_DIR`` when set, else
``$XDG_CACHE_HOME/ssa-agents/aider-<hash>`` (or ``~/.cache/ssa-agents/…``), where
``<hash>`` is the first 16 hex digits of the SHA-256 of the requirements file
and the interpreter's ``major.minor``; an unchanged lock reuses the install.
A virtual environment cannot be moved (its scripts name their interpreter by
absolute path), so it is built in place under an exclusive lock on
``<dir>.lock``, and counts as complete only once it holds :data:`MARKER`; a
directory without the marker (an interrupted install) is removed and rebuilt.

Command line: ``python -m tests.harness.pyinstall`` installs (or reuses) and
prints the ``aider`` executable; ``--check`` only says whether it is there.
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
from dataclasses import dataclass
from pathlib import Path

from tests.harness.install import InstallError

__all__ = ["AIDER_REQUIREMENTS", "MARKER", "PIP_TIMEOUT_S", "PyInstall", "aider_dir",
           "aider_hash", "install_aider", "installed_aider"]

log = logging.getLogger(__name__)

AIDER_REQUIREMENTS = Path(__file__).resolve().parents[1] / "agents" / "aider-requirements.txt"
"""The lock: ``aider-chat==0.86.2`` and its resolved dependencies."""
MARKER = ".ssa-installed"
"""File written into the environment once ``pip install`` succeeded there."""
PIP_TIMEOUT_S = 900.0
"""Longest the install may take, in seconds (a cold install downloads ~250 MB)."""


@dataclass(frozen=True)
class PyInstall:
    """A complete virtual environment holding a pinned Python CLI.

    Attributes:
        root: the environment's directory.
    """

    root: Path

    @property
    def bin_dir(self) -> Path:
        """``<root>/bin``."""
        return self.root / "bin"

    @property
    def aider(self) -> Path:
        """The ``aider`` executable."""
        return self.bin_dir / "aider"


def aider_hash(requirements: Path = AIDER_REQUIREMENTS) -> str:
    """First 16 hex digits of SHA-256 over the lock and the interpreter's ``major.minor``.

    Raises:
        OSError: the lock cannot be read.
    """
    digest = hashlib.sha256(requirements.read_bytes())
    digest.update(f"\npython {sys.version_info.major}.{sys.version_info.minor}\n".encode())
    return digest.hexdigest()[:16]


def aider_dir(requirements: Path = AIDER_REQUIREMENTS) -> Path:
    """Where the environment for this lock lives (``$SSA_AIDER_DIR`` wins); not created."""
    if os.environ.get("SSA_AIDER_DIR"):
        return Path(os.environ["SSA_AIDER_DIR"]).expanduser()
    base = (Path(os.environ["XDG_CACHE_HOME"]) if os.environ.get("XDG_CACHE_HOME")
            else Path.home() / ".cache")
    return base / "ssa-agents" / f"aider-{aider_hash(requirements)}"


def installed_aider(requirements: Path = AIDER_REQUIREMENTS) -> PyInstall | None:
    """The complete environment for this lock, or ``None``; never installs, never blocks."""
    root = aider_dir(requirements)
    return PyInstall(root) if (root / MARKER).is_file() else None


def install_aider(requirements: Path = AIDER_REQUIREMENTS) -> PyInstall:
    """Build the environment with the lock's exact pins unless it exists.

    Blocks the calling thread for the whole install (a minute or more when
    cold, milliseconds when cached) and while another process builds the
    same directory.

    Raises:
        InstallError: venv or pip failed, or took longer than :data:`PIP_TIMEOUT_S`.
    """
    found = installed_aider(requirements)
    if found is not None:
        return found
    root = aider_dir(requirements)
    root.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(root.parent / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = installed_aider(requirements)
        if found is not None:
            return found
        if root.exists():  # an interrupted install: start again
            shutil.rmtree(root)
        try:
            _run([sys.executable, "-m", "venv", str(root)], "python -m venv")
            _run([str(root / "bin" / "python"), "-m", "pip", "install", "--quiet",
                  "--disable-pip-version-check", "--no-deps", "-r", str(requirements)],
                 "pip install")
            (root / MARKER).write_text(aider_hash(requirements) + "\n")
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
    log.info("installed the pinned Aider into %s", root)
    return PyInstall(root)


def _run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"{what} took longer than {PIP_TIMEOUT_S:.0f} s") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
        raise InstallError(f"{what} failed (exit {done.returncode}):\n{tail}")


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.harness.pyinstall [--check]``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m tests.harness.pyinstall",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true",
                        help="only report whether the install exists (exit 1 when not)")
    args = parser.parse_args(argv)
    if args.check:
        found = installed_aider()
        sys.stdout.write(f"{found.aider}\n" if found else f"not installed: {aider_dir()}\n")
        return 0 if found else 1
    try:
        done = install_aider()
    except InstallError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    sys.stdout.write(f"{done.aider}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
