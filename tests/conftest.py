"""Shared fixtures: an injected clock, a gateway per test on each backend, and a leak check.

Every test that opens its gateway through ``open_gateway`` (or ``gateway``,
or asks for ``db``) runs twice: on SQLite and on PostgreSQL (a throw-away
server for the run, a fresh schema per test; see ``tests/_pg.py``). A test
that also asks for ``db_path`` looks at the SQLite file itself and runs on
SQLite only, as does one marked ``sqlite_only``.

Every blocking wait in the tests has its own timeout, shorter than
pytest-timeout's, and the autouse ``no_leaked_threads`` fixture fails any
test that leaves one of our actors or threads running.

The real upstream transcripts are read in place from ``../shared/fixtures``
beside the checkout (``SSA_TEST_FIXTURES`` names another fixtures directory).
Without them the modules and tests that read them are skipped, with a note
at the end of the run; under CI (``CI=true``) they are errors instead.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from actors import Gateway, GatewayConfig
from actors.testing import LeakCheck, ManualClock
from tests._pg import PgServer, pg_server, required
from tests.harness.fixtures import agent_harness, agent_install, require_tool  # noqa: F401

FIXTURE_ROOT = (Path(os.environ["SSA_TEST_FIXTURES"]) if os.environ.get("SSA_TEST_FIXTURES")
                else Path(__file__).resolve().parents[2] / "shared" / "fixtures")
"""The shared fixtures, read in place: ``../shared/fixtures`` beside the checkout, or
``$SSA_TEST_FIXTURES``."""
FIXTURES = FIXTURE_ROOT / "upstream"
"""The real upstream transcripts (``<fixture root>/upstream``)."""

HAVE_FIXTURES = FIXTURES.is_dir()
REQUIRE_FIXTURES = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
"""Under CI (``CI=true``) missing fixtures fail the run instead of leaving tests out."""
MISSING_FIXTURES = (f"the real upstream fixtures are not at {FIXTURES} (check out the shared "
                    "repository as ../shared beside this one, or set SSA_TEST_FIXTURES to its "
                    "fixtures directory)")

FIXTURE_MODULES = (
    "test_upstream_claude.py", "test_upstream_codex.py", "test_upstream_pi.py",
    "test_upstream_opencode.py", "test_upstream_opencode_json.py", "test_upstream_e2e.py",
    "test_fuzz_upstream.py", "test_crash_mixed.py",
)
"""Modules that read the fixtures while being collected."""



@pytest.fixture
def real_fixtures() -> Path:
    """The upstream fixtures directory; skips the test without it (fails it under CI)."""
    if not HAVE_FIXTURES:
        if REQUIRE_FIXTURES:
            pytest.fail(f"CI: {MISSING_FIXTURES}", pytrace=False)
        pytest.skip(MISSING_FIXTURES)
    return FIXTURES


needs_fixtures = pytest.mark.usefixtures("real_fixtures")
"""Mark a test that reads the real fixtures (skipped without them; failed under CI)."""


class _MissingFixtures(pytest.File):
    """A fixture-based module without the fixtures: skipped whole, or a collection error
    under CI. It is never imported (it would read the fixtures while being collected)."""

    def collect(self) -> list[pytest.Item]:
        if REQUIRE_FIXTURES:
            raise self.CollectError(f"CI: {MISSING_FIXTURES}")
        pytest.skip(MISSING_FIXTURES, allow_module_level=True)


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector
                                ) -> pytest.Collector | None:
    """A fixture-based module without the fixtures is collected as :class:`_MissingFixtures`."""
    if not HAVE_FIXTURES and module_path.name in FIXTURE_MODULES \
            and module_path.parent == Path(__file__).parent:
        return _MissingFixtures.from_parent(parent, path=module_path)
    return None

START_MS = 1_764_489_600_000  # 2025-11-30T08:00:00Z
DAY_MS = 24 * 60 * 60 * 1000
RETENTION_MS = 30 * DAY_MS
JOIN_TIMEOUT_S = 5.0

WATCHER = "agent:main:main"
NESTED_WATCHER = "agent:main:subagent:parent"
CHILD = "agent:main:subagent:child"
GROUP = "agent:main:telegram:group:room-1"


class Wakes:
    """``on_wake`` that lets a test wait for the n-th call (bounded; any thread)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._cond = threading.Condition()

    def __call__(self, watcher: str) -> None:
        with self._cond:
            self.calls.append(watcher)
            self._cond.notify_all()

    def wait_for(self, count: int, timeout: float = JOIN_TIMEOUT_S * 2) -> bool:
        """Whether ``count`` calls arrived within ``timeout`` seconds."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self.calls) >= count, timeout)


@dataclass
class WakeRecorder:
    """Records ``on_wake`` calls (called from the waker actor's thread)."""

    calls: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, watcher_key: str) -> None:
        with self.lock:
            self.calls.append(watcher_key)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START_MS)


@pytest.fixture
def wakes() -> WakeRecorder:
    return WakeRecorder()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "state.sqlite"


BACKENDS: tuple[str, ...] = ("sqlite", "postgresql")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: the test looks at SQLite itself")
    config.addinivalue_line("markers", "postgres_only: the test is of the PostgreSQL backend")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that uses ``db`` (``open_gateway``, ``gateway``) on both backends."""
    if "backend_name" not in metafunc.fixturenames:
        return
    marked = metafunc.definition.get_closest_marker
    if marked("postgres_only") is not None:
        names = BACKENDS[1:]
    elif "db_path" in metafunc.fixturenames or marked("sqlite_only") is not None:
        names = BACKENDS[:1]
    else:
        names = BACKENDS
    metafunc.parametrize("backend_name", names)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PgServer | str]:
    """The run's PostgreSQL server, or why there is none (started on first use)."""
    server = pg_server()
    yield server
    if isinstance(server, PgServer):
        server.close()


@dataclass
class SignalLogDb:
    """The test's signal log: its backend's name and its location (file or URL)."""

    name: str
    location: str | Path


@pytest.fixture
def db(backend_name: str, tmp_path: Path, request: pytest.FixtureRequest
       ) -> Iterator[SignalLogDb]:
    """The test's database: a SQLite file, or a fresh schema on the run's PostgreSQL server."""
    if backend_name == "sqlite":
        yield SignalLogDb("sqlite", tmp_path / "state" / "state.sqlite")
        return
    server = request.getfixturevalue("postgres")
    if isinstance(server, str):
        if required():
            pytest.fail(f"PostgreSQL is required (SSA_REQUIRE_POSTGRES) but: {server}")
        pytest.skip(server)
    url, schema = server.schema_url()
    yield SignalLogDb("postgresql", url)
    server.drop_schema(schema)


@pytest.fixture
def open_gateway(
    db: SignalLogDb, clock: ManualClock, wakes: WakeRecorder
) -> Iterator[Callable[..., Gateway]]:
    """Open gateways on the test database; all are closed at teardown."""
    opened: list[Gateway] = []

    def _open(config: GatewayConfig | None = None, **kwargs: object) -> Gateway:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("on_wake", wakes)
        kwargs.setdefault("monitor", False)
        gw = Gateway.open(db.location, config=config, **kwargs)  # type: ignore[arg-type]
        opened.append(gw)
        return gw

    yield _open
    for gw in opened:
        gw.close(timeout=JOIN_TIMEOUT_S)


@pytest.fixture
def gateway(open_gateway: Callable[..., Gateway]) -> Gateway:
    return open_gateway()


@pytest.fixture(autouse=True)
def hook_errors_kept_aside(tmp_path_factory: pytest.TempPathFactory,
                           monkeypatch: pytest.MonkeyPatch) -> Path:
    """``ssa hook`` failures (``actors.agents.hookerror``) go to a temporary file, never
    to the real home's state folder (subprocesses inherit the variable)."""
    path = tmp_path_factory.mktemp("hook-errors") / "last-errors.json"
    monkeypatch.setenv("SSA_HOOK_ERRORS", str(path))
    return path


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Fail the test if it leaves one of our actors or a new thread running."""
    check = LeakCheck(timeout=JOIN_TIMEOUT_S)
    yield
    problems = check.check()
    assert not problems, "; ".join(problems)


XDIST_MAX_WORKERS = 4
"""``-n auto`` uses one worker per CPU, at most this many (each starts its own
PostgreSQL server; most tests wait more than they compute)."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per CPU this process may use, 1 to 4."""
    return max(1, min(XDIST_MAX_WORKERS, len(os.sched_getaffinity(0))
                      if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that run pytest inside pytest (``pytester``) belong to the slow tier."""
    for item in items:
        if "pytester" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Mark the reports of tests that run pytest inside pytest (``pytester``).

    Their captured stdout is the nested run's own output (its ``ERRORS``
    sections included, which those tests provoke on purpose): it is not a
    "cases tried" line, so the summary below leaves it out. ``user_properties``
    travel with the report to an ``xdist`` controller.
    """
    outcome = yield
    if "pytester" in getattr(item, "fixturenames", ()):
        outcome.get_result().user_properties.append(("nested_pytest", True))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print what the reliability suites tried (their stdout), even under ``-q``.

    The fault, crash, fuzz, bad-input, privacy and soak suites print one line
    per case family ("tried N cases ..."); issue 5 asks CI to show them.
    """
    lines: list[str] = []
    for report in terminalreporter.stats.get("passed", []):
        if getattr(report, "when", "") != "call" or any(
                prop[0] == "nested_pytest" for prop in getattr(report, "user_properties", ())):
            continue
        for line in getattr(report, "capstdout", "").splitlines():
            if line.strip():
                lines.append(line.rstrip())
    if not HAVE_FIXTURES and not REQUIRE_FIXTURES:
        terminalreporter.write_line(
            f"note: {len(FIXTURE_MODULES)} fixture-based test modules and the tests marked "
            f"needs_fixtures were skipped: {MISSING_FIXTURES}; under CI=true this fails "
            "the run")
    if lines:
        terminalreporter.section("cases tried by the suites")
        for line in lines:
            terminalreporter.write_line(line)
