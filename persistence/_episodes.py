"""Fault episodes of the signal-log writer: one warning as writes fail, one as they recover.

What lives here: :class:`FaultEpisodes`, the persistence actor's record of
the current storage fault (full disk, a foreign lock, a lost server): it
logs a WARNING when an episode starts and one when it ends, not one per
failed write, and ends an episode only once writes have worked for
:data:`RECOVERY_CONFIRM_MS`; and :func:`fatal_hint`, what to tell a user
whose database proved unusable. No database access; the actor
(:mod:`persistence._writer`) decides what a fault is.
"""

from __future__ import annotations

import logging

from persistence.errors import recovery_hint

__all__ = ["RECOVERY_CONFIRM_MS", "FaultEpisodes", "fatal_hint"]

logger = logging.getLogger(__name__)

RECOVERY_CONFIRM_MS = 5_000
"""A fault episode ends (and "recovered" is logged) only once writes have worked for
this long (writer's clock, ms) without a failure: a lone batch that fits on a full
disk is not a recovery."""


class FaultEpisodes:
    """Whether the writer is in a fault episode, and how many commands it failed.

    Writes that work for a moment inside an episode (a small one that still
    fits on a full disk) do not end it; they are counted as flaps.

    The writer's thread only; never blocks.
    """

    def __init__(self) -> None:
        self.in_fault = False
        """Whether an episode is open."""
        self._failed_commands = 0
        self._flaps = 0
        self._recovering_since: int | None = None

    @property
    def recovering(self) -> bool:
        """Whether writes have worked since the last failure of an open episode."""
        return self._recovering_since is not None

    def failed(self, error: BaseException, commands: int) -> None:
        """Note that ``commands`` commands failed with the storage fault ``error``.

        Logs a WARNING when this opens an episode.
        """
        self._failed_commands += commands
        if self._recovering_since is not None:
            self._recovering_since = None
            self._flaps += 1
            logger.debug("signal-log writes failing again: %s", error)
        if self.in_fault:
            return
        self.in_fault = True
        logger.warning("signal-log writes are failing (%s: %s); producers return None "
                       "until this clears", type(error).__name__, error)

    def worked(self, now: int, *, final: bool = False) -> None:
        """Note that a batch really wrote at ``now`` (epoch ms).

        The episode ends (one WARNING) once writes held for
        :data:`RECOVERY_CONFIRM_MS`, or at once with ``final`` (the writer
        stops with writes working).
        """
        if not self.in_fault:
            return
        if self._recovering_since is None:
            self._recovering_since = now
        if not final and now - self._recovering_since < RECOVERY_CONFIRM_MS:
            return
        self.in_fault = False
        self._recovering_since = None
        flaps = f", {self._flaps} of them after writes had briefly worked" if self._flaps else ""
        logger.warning("signal-log writes recovered after %d failed commands%s",
                       self._failed_commands, flaps)
        self._failed_commands = self._flaps = 0


def fatal_hint(backend_name: str, location: str) -> str:
    """How to recover from a fatal error of the backend ``backend_name`` at ``location`` (pure).

    Returns:
        One sentence: for SQLite the recovery steps, for a server where to look.
    """
    if backend_name == "sqlite":
        return "To recover: " + recovery_hint(location) + "."
    return "Check the server's logs; the database cannot be trusted as it is."
