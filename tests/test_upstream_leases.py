"""Upstream scan leases between two gateways on one file, in one process (issue 9)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from actors import AdoptRequest, Gateway, GatewayConfig
from tests._upstream_rows import CLAUDE_SESSION, claude_assistant, claude_user
from tests.conftest import WATCHER, ManualClock

CONFIG = GatewayConfig(lease_ms=10_000)
KEY = "agent:main:claude:leased"


def _transcript(tmp_path: Path) -> Path:
    path = tmp_path / "projects" / "-work" / f"{CLAUDE_SESSION}.jsonl"  # its rows' session
    path.parent.mkdir(parents=True)
    path.write_bytes(claude_user("before") + claude_assistant("ok"))
    return path


def _refused(open_gateway: Callable[..., Gateway], tmp_path: Path) -> tuple[Gateway, Gateway]:
    """Two gateways on one link; the holder's lease refused the other's scan of a new turn."""
    transcript = _transcript(tmp_path)
    holder, other = open_gateway(CONFIG), open_gateway(CONFIG)
    request = AdoptRequest(key=KEY, source="claude", path=transcript)
    holder.adopt_many([request], watcher=WATCHER)
    assert holder.scan_upstream() == []  # the holder scans it: it holds the lease
    other.adopt_many([request], watcher=WATCHER)
    with transcript.open("ab") as handle:
        handle.write(claude_user("typed") + claude_assistant("ok"))
    assert other.scan_upstream() == []  # refused: leased to a live process
    return holder, other


def test_a_refused_scan_is_retried_when_the_holders_lease_lapses(
    open_gateway: Callable[..., Gateway], clock: ManualClock, tmp_path: Path,
) -> None:
    holder, other = _refused(open_gateway, tmp_path)
    retry = other._upstream._leases._settles[(KEY, "main")]
    assert retry == clock() + CONFIG.lease_ms + 1  # just after the lease lapses
    # The holder dies without scanning; once its lease lapsed the other takes over.
    clock.advance(CONFIG.lease_ms + 1)
    assert len(other.scan_upstream()) == 1
    assert holder.scan_upstream() == []  # now leased to the other


def test_no_retry_is_kept_once_the_holder_scanned_the_change(
    open_gateway: Callable[..., Gateway], clock: ManualClock, tmp_path: Path,
) -> None:
    holder, other = _refused(open_gateway, tmp_path)
    assert len(holder.scan_upstream()) == 1  # the holder counts it
    clock.advance(1)
    assert other.scan_upstream() == []  # refused again, but the link moved on
    assert (KEY, "main") not in other._upstream._leases._lease_waits
