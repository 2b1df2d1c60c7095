"""A throw-away PostgreSQL server for the test run, and one fresh schema per test.

The server is started from the PostgreSQL binaries on this machine (Debian's
``postgresql`` package: ``/usr/lib/postgresql/<version>/bin``, or whatever
``pg_config --bindir`` names), in a temporary directory, listening on
127.0.0.1 at a free port, and stopped at the end of the run. As root, the
server runs as the ``postgres`` user (``initdb`` refuses root). Nothing
depends on a server someone started by hand; ``SSA_TEST_POSTGRES_URL`` may
name one instead (a database where the tests may create schemas).

Without binaries the PostgreSQL variants are skipped, unless
``SSA_REQUIRE_POSTGRES=1`` (``.ci/run`` sets it), where they fail.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

START_TIMEOUT_S = 30

__all__ = ["LocalServer", "PgServer", "find_bindir", "pg_server", "required"]


def required() -> bool:
    """Whether a missing PostgreSQL must fail the run (``SSA_REQUIRE_POSTGRES=1``)."""
    return os.environ.get("SSA_REQUIRE_POSTGRES", "") not in ("", "0")


def find_bindir() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``, newest version first, or ``None``."""
    pg_config = shutil.which("pg_config")
    candidates: list[str] = []
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            candidates.append(subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True,
                timeout=10).stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                         key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit()
                         else 0, reverse=True)
    for candidate in candidates:
        if (Path(candidate) / "initdb").is_file() and (Path(candidate) / "pg_ctl").is_file():
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgServer:
    """A running throw-away server (or an external one) and its base URL.

    Args:
        url: the base URL (``postgresql://user@127.0.0.1:port/db``).
        stop: stops the server (``None``: an external server, left running).
    """

    def __init__(self, url: str, stop: Iterator[str] | None = None) -> None:
        self.url = url
        self._stop = stop

    def schema_url(self, prefix: str = "t") -> tuple[str, str]:
        """A fresh schema name and the URL that selects it."""
        schema = f"{prefix}_{uuid.uuid4().hex[:16]}"
        separator = "&" if "?" in self.url else "?"
        return f"{self.url}{separator}schema={schema}", schema

    def drop_schema(self, schema: str) -> None:
        """Drop a test schema and everything in it (blocks on the server)."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                sql.Identifier(schema)))

    def close(self) -> None:
        """Stop the server if this run started it."""
        if self._stop is not None:
            with contextlib.suppress(StopIteration):
                next(self._stop)


def _run_as_postgres(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    runuser = shutil.which("runuser")
    if runuser is None:
        raise RuntimeError("running as root needs runuser to start PostgreSQL as postgres")
    return [runuser, "-u", "postgres", "--", *argv]


class LocalServer:
    """A throw-away server in a temporary directory that a test may stop and start again.

    ``listen``: the addresses it listens on; ``trust``: further networks
    (CIDR) whose clients it lets in without a password, as it does loopback.
    Not ``durable`` (the default, for speed): ``synchronous_commit=off``, so a
    crash (``stop("immediate")``) may lose the last commits; ``durable``
    keeps every commit across a crash of the server (not of the machine:
    ``fsync`` stays off).

    ``initdb`` runs at construction; :meth:`start` and :meth:`stop` run
    ``pg_ctl`` (blocking, bounded by :data:`START_TIMEOUT_S`); :meth:`remove`
    stops it and deletes the directory. The port stays the same across
    restarts, so a URL taken once stays valid.

    Raises:
        RuntimeError: ``initdb`` or the start failed (with the server log's tail).
    """

    def __init__(self, bindir: Path, *, durable: bool = False,
                 listen: Sequence[str] = ("127.0.0.1",), trust: Sequence[str] = ()) -> None:
        self._bindir = bindir
        self._durable = durable
        self._listen = ",".join(listen)
        self._directory = Path(tempfile.mkdtemp(prefix="ssa-pg-"))
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            os.chown(self._directory, entry.pw_uid, entry.pw_gid)
        self._data = self._directory / "data"
        self._log = self._directory / "server.log"
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        try:
            subprocess.run(_run_as_postgres([
                str(bindir / "initdb"), "-D", str(self._data), "-A", "trust", "-U", "postgres",
                "--no-sync", "-E", "UTF8", "--locale=C"]), check=True, capture_output=True,
                timeout=START_TIMEOUT_S * 2)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            self.remove()
            raise RuntimeError(f"could not create a test PostgreSQL cluster: {exc}") from exc
        if trust:
            with (self._data / "pg_hba.conf").open("a") as hba:
                hba.writelines(f"host all all {network} trust\n" for network in trust)

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = " ".join([
            f"-c listen_addresses={self._listen}", f"-p {self.port}", f"-k {self._directory}",
            "-c fsync=off", f"-c synchronous_commit={'on' if self._durable else 'off'}",
            "-c full_page_writes=off",
            "-c max_connections=400", "-c shared_buffers=64MB"])
        try:
            subprocess.run(_run_as_postgres([
                str(self._bindir / "pg_ctl"), "-D", str(self._data), "-o", options,
                "-l", str(self._log), "-w", "-t", str(START_TIMEOUT_S), "start"]),
                check=True, capture_output=True, timeout=START_TIMEOUT_S + 10)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            detail = self._log.read_text(errors="replace")[-2000:] if self._log.exists() else ""
            raise RuntimeError(f"could not start a test PostgreSQL server: {exc}\n{detail}"
                               ) from exc

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: sessions are terminated; ``immediate``: a crash)."""
        subprocess.run(_run_as_postgres([
            str(self._bindir / "pg_ctl"), "-D", str(self._data), "-m", mode, "-w", "stop"]),
            capture_output=True, timeout=START_TIMEOUT_S, check=False)

    def remove(self) -> None:
        """Stop the server if it runs and delete its directory (idempotent)."""
        if self._data.exists():
            self.stop("immediate")
        shutil.rmtree(self._directory, ignore_errors=True)


def _started(bindir: Path) -> Iterator[str]:
    server = LocalServer(bindir)
    try:
        server.start()
    except RuntimeError:
        server.remove()
        raise
    try:
        yield server.url
    finally:
        server.remove()


def pg_server() -> PgServer | str:
    """Start (or find) the test server; a string says why there is none.

    Blocks while the server starts (a few seconds).
    """
    external = os.environ.get("SSA_TEST_POSTGRES_URL")
    if external:
        return PgServer(external)
    try:
        import psycopg  # noqa: F401 -- the driver must be there too
    except ImportError:
        return "psycopg is not installed (pip install -e '.[test]')"
    bindir = find_bindir()
    if bindir is None:
        return ("no PostgreSQL binaries (install Debian's postgresql package, or set "
                "SSA_TEST_POSTGRES_URL)")
    stop = _started(bindir)
    url = next(stop)
    return PgServer(url, stop)
