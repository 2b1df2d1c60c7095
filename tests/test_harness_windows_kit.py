"""A Windows-recorded session built by the kit, decided through ``ssa classify``'s code
path and compared with the action log the harness fills from what the kit wrote
(issue 32, "Done when"): precision = recall = 1.0 for every source whose kit writes
one (:mod:`tests.harness.windows_kit`; ``python -m tests.harness.drift`` prints it too).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.windows_kit import SOURCES, windows_session


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_windows_recorded_session_is_decided_exactly(tmp_path: Path, source: str) -> None:
    result = windows_session(source, tmp_path / source)
    assert not result.unseen, result.report()
    assert (result.precision, result.recall) == (1.0, 1.0), result.report()
    assert len(result.true_positives) == 2, result.report()
    shell = next(a for a in result.actions if a.kind == "shell_call")
    assert result.rows_of(shell), result.report()  # the tool call was written and read
