"""session-state-awareness's ``pytest11`` entry point: only the ``ssa_fixtures`` ini option.

pytest loads every installed ``pytest11`` plugin into every run; this one
adds nothing to a suite that does not ask for it, and imports nothing of the
library (a top-level module of its own, so a project with its own
``actors`` package is not disturbed). With ``ssa_fixtures = true`` in the
suite's ini (or ``-p actors.testing``) the fixtures of :mod:`actors.testing`
are registered.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    """Declare ``ssa_fixtures`` (pytest hook; runs once at start-up)."""
    parser.addini("ssa_fixtures", type="bool", default=False,
                  help="register the session-state-awareness test fixtures "
                       "(ssa_clock, ssa_gateway, ssa_async_gateway); same as -p actors.testing")


def pytest_configure(config: pytest.Config) -> None:
    """Register :mod:`actors.testing` as a plugin when the ini asks for it (pytest hook)."""
    if config.getini("ssa_fixtures") and not config.pluginmanager.has_plugin("actors.testing"):
        config.pluginmanager.import_plugin("actors.testing")
