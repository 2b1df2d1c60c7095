"""``ssa classify``: the monitor's own classifiers over a whole transcript."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import Any

import apsw

from actors.errors import InvalidArgument, SessionStateError
from actors.upstream._files import file_state
from actors.upstream._scan import line_classifier

__all__ = ["classify_units"]


def classify_units(source: str, path: str, *, session: str | None = None
                   ) -> Iterator[dict[str, Any]]:
    """Yield one decision per unit: ``{"line": n, "human": ..., "reason": ...}``.

    JSONL sources yield one entry per non-blank line (0-based line index);
    OpenCode yields ``{"message": id, "session": id, "human": ..., "reason": ...}``
    per message of ``session``. A line the monitor would stop at carries
    ``"stop": true``. Runs in the caller's thread; reads the file lazily.

    Raises:
        InvalidArgument: OpenCode without ``session``, or an unknown source.
        SessionStateError: the file cannot be read.
    """
    state = file_state(path)
    if state.kind != "ok":
        raise SessionStateError(f"cannot read {path}: {state.reason}")
    if source == "opencode":
        if not session:
            raise InvalidArgument("--session is required for opencode")
        from actors.upstream.opencode import classify_db_session  # noqa: PLC0415

        try:
            decisions = classify_db_session(path, session)
        except LookupError:
            raise SessionStateError(f"no OpenCode session {session!r} in {path}") from None
        except apsw.Error as exc:
            raise SessionStateError(f"cannot read {path}: {exc}") from exc
        for message_id, unit in decisions:
            yield {"message": message_id, "session": session, "human": unit.human,
                   "reason": unit.reason}
        return
    try:
        classify = line_classifier(source)
    except KeyError:
        raise InvalidArgument(f"unknown source {source!r}") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise SessionStateError(f"cannot read {path}: not a regular file")
        with os.fdopen(fd, "rb") as handle:
            for index, line in enumerate(handle):
                if not line.strip():
                    continue
                unit = classify(line.rstrip(b"\n"))
                entry: dict[str, Any] = {"line": index, "human": unit.human,
                                         "reason": unit.reason}
                if unit.stop:
                    entry["stop"] = True
                yield entry
    except OSError as exc:
        raise SessionStateError(f"cannot read {path}: {exc}") from exc
