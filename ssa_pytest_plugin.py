"""session-state-awareness's ``pytest11`` entry point: the ``ssa_fixtures`` ini option.

pytest loads every installed ``pytest11`` plugin into every run; this one
adds nothing to a suite that does not ask for it, and imports nothing of the
library (a top-level module of its own, so a project with its own
``actors`` package is not disturbed). With ``ssa_fixtures = true`` in the
suite's ini (or ``-p actors.testing``) the fixtures of :mod:`actors.testing`
are registered. Without them, a test that asks for one fails with pytest's
``fixture 'ssa_gateway' not found``, to which this plugin adds how to turn
them on.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

FIXTURES = frozenset({"ssa_clock", "ssa_gateway", "ssa_async_gateway", "ssa_gateway_options"})
"""The fixtures :mod:`actors.testing` registers."""
HINT = ("the session-state-awareness fixtures are off: set 'ssa_fixtures = true' in the "
        "pytest ini ([pytest] or [tool.pytest.ini_options]), or run pytest -p actors.testing")
"""The line added to a missing fixture's error."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Declare ``ssa_fixtures`` (pytest hook; runs once at start-up)."""
    parser.addini("ssa_fixtures", type="bool", default=False,
                  help="register the session-state-awareness test fixtures "
                       "(ssa_clock, ssa_gateway, ssa_async_gateway); same as -p actors.testing")


def pytest_configure(config: pytest.Config) -> None:
    """Register :mod:`actors.testing` as a plugin when the ini asks for it (pytest hook)."""
    if config.getini("ssa_fixtures") and not config.pluginmanager.has_plugin("actors.testing"):
        config.pluginmanager.import_plugin("actors.testing")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Add :data:`HINT` to the error of a test that asks for one of :data:`FIXTURES` while
    they are off (pytest hook wrapper; the test's thread; never raises)."""
    report = yield
    longrepr = getattr(report, "longrepr", None)
    if (call.when == "setup" and getattr(report, "failed", False)
            and getattr(longrepr, "argname", None) in FIXTURES
            and isinstance(getattr(longrepr, "errorstring", None), str)
            and not item.config.pluginmanager.has_plugin("actors.testing")):
        longrepr.errorstring += f"\n{HINT}"  # type: ignore[union-attr]
    return report
