"""Opening a gateway: the signal log, the restart sweep and a started :class:`Runtime`.

:func:`open_runtime` is the body of :meth:`actors.Gateway.open` up to the
upstream monitor: it checks the arguments, opens (creating and migrating)
the backend, joins the presence marker and, alone, runs the restart sweep;
then starts the :class:`~actors.facade.core.Runtime`, publishes the sweep's
wakes, prunes, and hosts the watchers of ``hosts=``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable

import pykka

from actors.config import GatewayConfig
from actors.errors import InvalidArgument, StorageError
from actors.facade import validate as v
from actors.facade.core import Runtime, SaneClock, wall_clock
from persistence import (
    Backend,
    Ping,
    Presence,
    Prune,
    SweepOutcome,
    clear_all_leases,
    is_epoch_ms,
    open_backend,
    submit,
    sweep_cursors,
    write_transaction,
)
from persistence.errors import InvalidLocation
from persistence.locations import default_state_path

__all__ = ["open_runtime"]

Clock = Callable[[], int]


def _sane_now(clock: Clock) -> int:
    """``clock()`` if it answers epoch ms, else the system clock (as the writer does)."""
    try:
        now = clock()
    except Exception:
        return wall_clock()
    return now if is_epoch_ms(now) else wall_clock()


def _join(backend: Backend, presence: Presence, host_id: str,
          now: int) -> tuple[SweepOutcome, bool]:
    """Migrate, join the presence marker and, when alone, run the restart sweep.

    All inside one write transaction: two gateways opening at once serialize
    here, so at most one of them finds itself alone. Returns the sweep and
    whether it was alone.

    Raises:
        StorageError, SchemaError, DatabaseBusy: as :meth:`Gateway.open`.
    """
    conn = backend.connect(writer=True, migrate=True)
    try:
        with write_transaction(backend, conn):
            alone = presence.join()
            if alone:
                # Nobody else has the log open: leases and unclaimed wakes are stale.
                clear_all_leases(conn)
                sweep = sweep_cursors(conn, None, now, 0, host=host_id)
            else:
                sweep = SweepOutcome(notices=())
    except BaseException as exc:
        if backend.is_driver_error(exc) and not isinstance(exc, StorageError):
            raise StorageError(f"cannot open {backend.location}: {exc}") from exc
        raise
    finally:
        conn.close()
    return sweep, alone


def open_runtime(path: str | os.PathLike[str] | None, *, config: GatewayConfig | None,
                 clock: Clock | None, on_wake: Callable[[str], None] | None,
                 monitor: bool, hosts: Iterable[str]) -> Runtime:
    """Open the signal log and start a gateway's runtime (``Gateway.open`` without the monitor).

    Args:
        path, config, clock, on_wake, monitor, hosts: as :meth:`actors.Gateway.open`
            (``monitor`` is only checked here; the caller starts the cadence).

    Returns:
        The started runtime (``shared_at_open`` set), its sweep's wakes run,
        pruned, hosting ``hosts``.

    Raises:
        ArgumentTypeError, InvalidArgument, BackendNotInstalled, DatabaseBusy,
        SchemaError, StorageError, OSError: as :meth:`actors.Gateway.open`.

    Calling thread; blocks on disk.
    """
    config = v.check_open(config, clock, on_wake, monitor)
    hosted = v.check_hosts(hosts, on_wake)
    given = v.check_location(path)
    location = given if given is not None else default_state_path()
    try:
        backend = open_backend(location, synchronous=config.synchronous,
                               busy_timeout_ms=config.busy_timeout_ms, vfs=config.vfs)
        backend.prepare()  # a SQLite path: the location rule, then its folder and file
    except InvalidLocation as exc:
        raise InvalidArgument(str(exc)) from None
    clock = SaneClock(clock) if clock is not None else wall_clock
    host_id = uuid.uuid4().hex
    presence = backend.presence()
    try:
        sweep, alone = _join(backend, presence, host_id, _sane_now(clock))
    except BaseException:
        presence.release()
        raise
    runtime = Runtime(backend, config, clock, on_wake, presence, host_id)
    runtime.shared_at_open = not alone
    try:
        runtime.persistence.ask(Ping(), timeout=runtime.timeout)
        runtime.publish(sweep.notices)
        submit(runtime.persistence, Prune(force=True), timeout=runtime.timeout)
        if hosted:
            runtime.hosting.host(hosted)
    except BaseException as exc:
        runtime.close()
        if isinstance(exc, pykka.ActorDeadError | pykka.Timeout):
            raise StorageError(
                f"the persistence actor failed to start on {backend.location}") from exc
        raise
    return runtime
