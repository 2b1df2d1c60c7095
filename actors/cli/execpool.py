"""``ssa watch --exec``: run a command per notice, bounded, timed, never in the loop's way.

:meth:`ExecPool.submit` only queues (it never blocks the watch loop); a fixed
set of worker threads runs the command once per submission, its document on
standard input. Each run has its own process group (a new session), so a
timeout or the watch's end kills whatever the command started, and whatever a
finished command left in its group is killed when it exits. A failure of any
kind (non-zero exit, signal, timeout, a command that cannot start, a full
queue) is one warning line on this module's logger, never an exception: the
notice itself stays reconcilable from the signal log (``ssa status``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import IO, NamedTuple

from actors.errors import SessionStateError

__all__ = ["DEFAULT_JOBS", "DEFAULT_QUEUE_LIMIT", "DEFAULT_TIMEOUT_S", "ExecPool",
           "command_argv"]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
"""Seconds a run may take before its process group is killed (``--exec-timeout``)."""
DEFAULT_JOBS = 4
"""Runs at once (``--exec-jobs``)."""
MAX_JOBS = 64
"""The largest ``--exec-jobs`` accepted."""
DEFAULT_QUEUE_LIMIT = 64
"""Runs that may wait for a free slot; one more is skipped (and logged)."""
KILL_GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL for a run that is cut short."""
SHELL = "/bin/sh"
"""The shell of ``--shell``."""


def command_argv(command: str, *, shell: bool) -> list[str]:
    """The argument vector that runs ``command`` (startup check of ``--exec``).

    Args:
        command: the ``--exec`` string. Without ``shell`` it is split with
            :func:`shlex.split` and run without a shell; its first word must
            be an executable file (a path) or be found on ``PATH``.
        shell: run ``command`` as ``/bin/sh -c COMMAND`` instead.

    Returns:
        The argv list for :class:`ExecPool`.

    Raises:
        SessionStateError: the command is empty, its quoting is unbalanced or
            its program is not found; the message is one line naming it.

    Any thread; blocks on a few ``stat`` calls.
    """
    if shell:
        if not command.strip():
            raise SessionStateError("--exec needs a command")
        return [SHELL, "-c", command]
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise SessionStateError(f"--exec: cannot split the command: {exc}") from None
    if not argv:
        raise SessionStateError("--exec needs a command")
    program = argv[0]
    if os.sep in program or (os.altsep is not None and os.altsep in program):
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            raise SessionStateError(f"--exec: {program} is not an executable file")
    elif shutil.which(program) is None:
        raise SessionStateError(f"--exec: command not found on PATH: {program} "
                                "(--shell runs it with /bin/sh -c)")
    return argv


class _Job(NamedTuple):
    """One queued run: standard input, extra environment, a label for log lines."""

    stdin: bytes
    env: Mapping[str, str]
    label: str


class _Run:
    """A started command, shared by its worker and its watchdog.

    ``exited`` (under ``lock``) turns true once the leader has exited and
    before it is reaped: until then the group id cannot be reused, so a
    signal sent under the lock while ``exited`` is false reaches this run.
    """

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lock = threading.Lock()
        self.exited = False
        self.cut: tuple[str, str] | None = None  # (outcome, why) once the watchdog signalled it
        self.done = threading.Event()  # the leader exited
        self.wake = threading.Event()  # the leader exited, or it must stop now

    def signal_group(self, sig: signal.Signals, cut: tuple[str, str] | None = None) -> bool:
        """Send ``sig`` to the run's process group unless it has exited; ``True`` if sent.

        ``cut`` (outcome, why) is noted as the reason the run was cut short.
        """
        with self.lock:
            if self.exited:
                return False
            if cut is not None:
                self.cut = cut
            _killpg(self.proc.pid, sig)
            return True


def _killpg(pgid: int, sig: signal.Signals) -> None:
    # An empty group (or one left with only a member we may not signal) is fine.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _stdin_file(data: bytes) -> IO[bytes]:
    """An anonymous file holding ``data``, positioned at its start.

    A file rather than a pipe: writing it never blocks on a command that
    does not read its input. In memory where the platform allows.
    """
    handle: IO[bytes]
    if hasattr(os, "memfd_create"):
        handle = os.fdopen(os.memfd_create("ssa-exec-stdin"), "w+b")
    else:  # pragma: no cover - not Linux
        handle = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by the caller
    try:
        handle.write(data)
        handle.flush()
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    return handle


def _wait_exited(proc: subprocess.Popen[bytes]) -> None:
    """Block until the leader has exited, without reaping it where the platform allows."""
    if hasattr(os, "waitid"):
        try:
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
            return
        except ChildProcessError:
            pass  # reaped elsewhere (SIGCHLD ignored): Popen.wait copes
    proc.wait()  # pragma: no cover - no waitid (its group is then signalled after the reap)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class ExecPool:
    """Runs a command once per submission with bounded concurrency and a timeout.

    Args:
        argv: the command (see :func:`command_argv`), run without a shell.
        timeout_s: seconds a run may take; then its process group gets
            SIGTERM, and SIGKILL ``kill_grace_s`` later.
        jobs: runs at once (worker threads, started here), at least 1.
        queue_limit: submissions that may wait for a free worker; a
            submission beyond that is skipped and logged.
        output_fd: where the command's stdout and stderr go (default 2, this
            process's stderr, as git does for hooks: stdout stays the
            watch's); ``None`` inherits both.
        kill_grace_s: seconds between SIGTERM and SIGKILL.
        shutdown_grace_s: what the context manager's exit passes to
            :meth:`close`.

    Raises:
        ValueError: ``argv`` is empty, or a number is out of range.

    Each run gets ``stdin`` as its standard input (a file, read to its end),
    this process's environment plus the submission's ``env``, and a process
    group of its own. Thread-safe: :meth:`submit` from any thread; call
    :meth:`close` once, from one thread, and always (it is what stops the
    workers and any process left).
    """

    def __init__(self, argv: Sequence[str], *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 jobs: int = DEFAULT_JOBS, queue_limit: int = DEFAULT_QUEUE_LIMIT,
                 output_fd: int | None = 2, kill_grace_s: float = KILL_GRACE_S,
                 shutdown_grace_s: float = 5.0) -> None:
        if not argv:
            raise ValueError("argv must name a command")
        if not (math.isfinite(timeout_s) and timeout_s > 0):
            raise ValueError("timeout_s must be a positive number of seconds")
        if jobs < 1 or queue_limit < 0:
            raise ValueError("jobs must be at least 1 and queue_limit not negative")
        self._argv = list(argv)
        self._timeout_s = timeout_s
        self._queue_limit = queue_limit
        self._output_fd = output_fd
        self._kill_grace_s = kill_grace_s
        self._shutdown_grace_s = shutdown_grace_s
        self._cond = threading.Condition()
        self._waiting: deque[_Job] = deque()
        self._running: set[_Run] = set()
        self._busy = 0  # jobs taken by a worker and not finished
        self._closing = False  # no new submissions; workers end once the queue is empty
        self._stopping = False  # the grace is over: cut every run short
        self._outcomes: Counter[str] = Counter()
        self._workers = [threading.Thread(target=self._work, name=f"ssa-exec-{n}", daemon=True)
                         for n in range(jobs)]
        for worker in self._workers:
            worker.start()

    def __enter__(self) -> ExecPool:
        """The pool itself."""
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """:meth:`close` with ``shutdown_grace_s``."""
        self.close(self._shutdown_grace_s)

    def submit(self, stdin: bytes, env: Mapping[str, str], label: str) -> bool:
        """Queue one run; never blocks on the command and never raises.

        Args:
            stdin: the run's whole standard input.
            env: variables added to this process's environment for the run.
            label: names the run in log lines (e.g. the session key and
                ``changesSince``); metadata only, never message text.

        Returns:
            ``True`` if queued; ``False`` if skipped (the queue is full or
            the pool is closing), which is logged in one line.

        Any thread; takes the pool's lock briefly.
        """
        with self._cond:
            if not self._closing and len(self._waiting) < self._queue_limit:
                self._waiting.append(_Job(stdin, env, label))
                self._cond.notify()
                return True
            self._outcomes["skipped"] += 1
            why = "the watch is stopping" if self._closing else \
                f"{len(self._waiting)} runs already wait for a free slot"
        logger.warning("--exec for %s: skipped, %s", label, why)
        return False

    def outcomes(self) -> dict[str, int]:
        """How runs ended so far, by outcome.

        Keys: ``ok``, ``failed`` (non-zero exit), ``crashed`` (ended by a
        signal), ``timed out``, ``stopped`` (cut short by :meth:`close`),
        ``unstartable``, ``skipped`` (not queued), ``dropped`` (queued but
        not started before :meth:`close` gave up). Any thread.
        """
        with self._cond:
            return dict(self._outcomes)

    def wait_idle(self, timeout_s: float) -> bool:
        """Block up to ``timeout_s`` seconds until no run waits or runs; ``True`` if idle."""
        with self._cond:
            return self._cond.wait_for(self._idle, timeout_s)

    def close(self, grace_s: float) -> None:
        """Stop taking submissions, let runs finish for ``grace_s`` s, then kill the rest.

        Queued runs still start during the grace; those left when it is over
        are dropped and running ones are cut short (SIGTERM, then SIGKILL
        after ``kill_grace_s``), each logged in one line. Returns once every
        worker has ended, so no process of the pool is left: at most
        ``grace_s + kill_grace_s`` seconds and the time the processes take
        to die. The thread that owns the pool; a second call does nothing.
        """
        with self._cond:
            if self._closing:
                return
            self._closing = True
            self._cond.notify_all()
        try:
            with self._cond:
                self._cond.wait_for(self._idle, max(grace_s, 0.0))
        finally:  # even when interrupted: no run may outlive the pool
            with self._cond:
                dropped = len(self._waiting)
                self._waiting.clear()
                if dropped:
                    self._outcomes["dropped"] += dropped
                self._stopping = True
                running = list(self._running)
            if dropped:
                logger.warning("--exec: the watch stopped; %d queued runs were not started",
                               dropped)
            for run in running:
                run.wake.set()
            for worker in self._workers:
                worker.join()

    def _idle(self) -> bool:
        return not self._waiting and self._busy == 0

    def _work(self) -> None:
        """A worker thread: take jobs until the pool closes and its queue is empty."""
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._waiting) or self._closing)
                if not self._waiting:
                    return
                job = self._waiting.popleft()
                self._busy += 1
            try:
                outcome = self._execute(job)
            except Exception as exc:  # a run never takes its worker down
                logger.warning("--exec for %s: the run failed: %s", job.label,
                               type(exc).__name__)
                outcome = "failed"
            with self._cond:
                self._busy -= 1
                self._outcomes[outcome] += 1
                self._cond.notify_all()

    def _execute(self, job: _Job) -> str:
        """Run ``job`` to its end in this worker thread; returns its outcome (logged)."""
        started = time.monotonic()
        try:
            with _stdin_file(job.stdin) as stdin:
                proc = subprocess.Popen(  # noqa: S603 -- the user's own command, no shell
                    self._argv, stdin=stdin, stdout=self._output_fd, stderr=self._output_fd,
                    env={**os.environ, **job.env}, start_new_session=True, close_fds=True)
        except OSError as exc:
            logger.warning("--exec for %s: cannot start %s: %s", job.label, self._argv[0],
                           exc.strerror or type(exc).__name__)
            return "unstartable"
        run = _Run(proc)
        with self._cond:
            self._running.add(run)
            if self._stopping:
                run.wake.set()
        watchdog = threading.Thread(target=self._watchdog, args=(run,),
                                    name="ssa-exec-watchdog", daemon=True)
        watchdog.start()
        try:
            _wait_exited(proc)
            with run.lock:  # the leader is a zombie: its group id is still ours
                _killpg(proc.pid, signal.SIGKILL)  # whatever it left running
                run.exited = True
        finally:
            run.done.set()
            run.wake.set()
            watchdog.join()
            proc.wait()
            with self._cond:
                self._running.discard(run)
        elapsed = time.monotonic() - started
        code = proc.returncode
        if run.cut is not None:
            outcome, why = run.cut
            logger.warning("--exec for %s: %s; its process group was killed (%.1f s)",
                           job.label, why, elapsed)
            return outcome
        if code > 0:
            logger.warning("--exec for %s: exited with status %d (%.1f s)", job.label, code,
                           elapsed)
            return "failed"
        if code < 0:
            logger.warning("--exec for %s: killed by %s (%.1f s)", job.label,
                           _signal_name(-code), elapsed)
            return "crashed"
        logger.debug("--exec for %s: done (%.1f s)", job.label, elapsed)
        return "ok"

    def _watchdog(self, run: _Run) -> None:
        """A run's watchdog thread: cut it short at its timeout or when the pool stops."""
        if run.wake.wait(self._timeout_s):
            if run.done.is_set():
                return
            cut = ("stopped", "stopped with the watch")
        else:
            cut = ("timed out", f"timed out after {self._timeout_s:g} s")
        if not run.signal_group(signal.SIGTERM, cut):
            return
        if not run.done.wait(self._kill_grace_s):
            run.signal_group(signal.SIGKILL)
