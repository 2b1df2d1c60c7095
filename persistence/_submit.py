"""Handing write commands to the persistence actor and waiting for their commits.

What lives here: :func:`submit` (one command, wait), :func:`submit_many`
(several, sharing group commits), and its two halves :func:`send_many`
(queue without waiting) and :func:`collect` (wait for the replies). They
run in the caller's thread; the actor itself is :mod:`persistence._writer`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pykka

from persistence._messages import Command, WriteRequest
from persistence._reply import PENDING, Reply
from persistence.errors import StorageError, StorageUnavailable
from persistence.runtime import scheduling

__all__ = ["collect", "send_many", "submit", "submit_many"]

def submit_many(ref: pykka.ActorRef[Any], commands: list[Command], *, timeout: float,
                on_late: Callable[[Any], None] | None = None) -> list[Any]:
    """Send several commands at once so they share group commits; wait for all of them.

    The commands are queued together (on the dispatcher, not run one by one
    in this thread), so up to :data:`~persistence._writer.BATCH_LIMIT` of them commit in one
    transaction, each in its own savepoint when one fails.

    Args:
        ref: the persistence actor.
        commands: the write commands, applied in this order.
        timeout: seconds to wait for all of them.
        on_late: as for :func:`submit`, for each command still pending at the timeout.

    Returns:
        One entry per command, in order: its result, or the
        :class:`StorageError` it failed with (a timed-out command gets a
        :class:`StorageUnavailable`; it may still be applied later).

    Caller's thread; blocks until all committed or ``timeout``.

    Raises:
        StorageUnavailable: the actor is not running.
    """
    return collect(send_many(ref, commands), timeout=timeout, on_late=on_late)


def send_many(ref: pykka.ActorRef[Any], commands: list[Command]) -> list[Reply]:
    """Queue ``commands`` for one group commit without waiting (see :func:`collect`).

    Caller's thread; non-blocking (the commit runs on a dispatcher worker).

    Raises:
        StorageUnavailable: the actor is not running.
    """
    replies = [Reply() for _ in commands]
    try:
        with scheduling():
            for command, reply in zip(commands, replies, strict=True):
                ref.tell(WriteRequest(command=command, reply=reply))
    except pykka.ActorDeadError as exc:
        raise StorageUnavailable("the persistence actor is not running") from exc
    return replies


def collect(replies: list[Reply], *, timeout: float,
            on_late: Callable[[Any], None] | None = None) -> list[Any]:
    """Wait for the replies of :func:`send_many`; results or errors as :func:`submit_many`.

    Caller's thread; blocks up to ``timeout`` seconds in all.
    """
    deadline = time.monotonic() + timeout
    results: list[Any] = []
    for reply in replies:
        try:
            results.append(reply.get(timeout=max(0.0, deadline - time.monotonic())))
        except StorageError as exc:
            results.append(exc)
        except pykka.Timeout:
            value = reply.abandon(on_late) if on_late is not None else PENDING
            results.append(value if value is not PENDING else StorageUnavailable(
                f"no answer from the persistence actor in {timeout}s"))
    return results


def submit(ref: pykka.ActorRef[Any], command: Command, *, timeout: float,
           on_late: Callable[[Any], None] | None = None) -> Any:
    """Send ``command`` to the persistence actor and wait for its committed result.

    Runs in the caller's thread and blocks until the command's transaction
    committed (or failed), at most ``timeout`` seconds.

    Args:
        ref: the persistence actor.
        command: the write command.
        timeout: seconds to wait.
        on_late: called (in the persistence actor's thread, so it must not
            block) with the result if the command commits after the caller
            gave up; e.g. to publish its notices anyway.

    Raises:
        StorageError: the command or its transaction failed.
        StorageUnavailable: the actor is not running or did not answer in time
            (a timed-out command may still be applied later: see ``on_late``).
    """
    reply = Reply()
    try:
        ref.tell(WriteRequest(command=command, reply=reply))
    except pykka.ActorDeadError as exc:
        raise StorageUnavailable("the persistence actor is not running") from exc
    try:
        return reply.get(timeout=timeout)
    except pykka.Timeout as exc:
        if on_late is not None:
            value = reply.abandon(on_late)
            if value is not PENDING:
                return value  # it arrived just as we gave up
        raise StorageUnavailable(f"no answer from the persistence actor in {timeout}s") from exc
