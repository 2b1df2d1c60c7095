"""The catalog feed (``actors.monitors.catalogfeed``): one catalog that ``watchfiles``
cannot watch leaves the others their directory notifications."""

from __future__ import annotations

import os
import queue
import sys
from pathlib import Path

import pytest

from actors.monitors.catalogfeed import CatalogFeed

WAIT_S = 10.0


@pytest.mark.skipif(sys.platform != "linux", reason="a non-UTF-8 folder name needs Linux")
@pytest.mark.timeout(30)
def test_a_catalog_holding_a_non_utf8_folder_name_does_not_stop_the_others(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Review finding: one such folder failed the shared watch of every catalog."""
    bad, good = tmp_path / "bad", tmp_path / "good"
    good.mkdir()
    os.makedirs(os.fsencode(bad) + b"/proj-\xff\xfe/sub")
    seen: queue.Queue[set[Path]] = queue.Queue()
    with caplog.at_level("WARNING", logger="actors.monitors.catalogfeed"):
        feed = CatalogFeed([bad, good], seen.put, step_ms=20, retry_s=60.0)
        try:
            assert feed.ready.wait(WAIT_S)
            assert seen.get(timeout=WAIT_S) == {good}  # the first yield: the watched roots
            (good / "new-project").mkdir()
            assert seen.get(timeout=WAIT_S) == {good}  # a notification, not the 60 s retry
        finally:
            assert feed.close(WAIT_S) == 0
    assert f"directory notifications of {bad} failed" in caplog.text
    assert "of the catalogs failed" not in caplog.text
