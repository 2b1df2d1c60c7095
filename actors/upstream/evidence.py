"""How long a prompted session may lack the interactive UI's evidence before it
is decided program-driven.

Gemini CLI and Qwen Code tell a session a person drives from a headless run by
a file written *beside* the transcript (Gemini's ``logs.json`` query log,
Qwen's ``<session>.runtime.json`` sidecar). That file is not always written
before the transcript's first prompt row: Gemini CLI's agent stream logs the
query with an un-awaited ``void logger.logMessage(...)``, Qwen Code writes its
sidecar while the UI starts. So while the transcript changed less than
:data:`EVIDENCE_GRACE_S` seconds ago, a missing entry proves nothing yet: the
session is adopted again later, and a scan stops before the row to read it
again (the evidence file is watched with the transcript, so its write brings
that scan). Older than that, the session is ``program_driven`` as before.

Pure apart from one ``stat``; thread-safe; never raises.
"""

from __future__ import annotations

import time

from actors.upstream.files import file_state

__all__ = ["EVIDENCE_GRACE_S", "evidence_may_follow"]

EVIDENCE_GRACE_S = 5.0
"""Seconds after a transcript's last change during which its evidence may still land."""


def evidence_may_follow(path: str, *, now_s: float | None = None) -> bool:
    """Whether the transcript at ``path`` changed less than :data:`EVIDENCE_GRACE_S`
    seconds before ``now_s``.

    Args:
        path: the transcript.
        now_s: epoch seconds (default: ``time.time()``; the file's mtime is wall-clock too).

    Returns:
        ``True`` while its evidence file may still be written; ``False`` for an
        older or unreadable transcript. One ``stat``; never raises.
    """
    state = file_state(path)
    if state.kind != "ok":
        return False
    now = time.time() if now_s is None else now_s
    return now * 1000 - state.mtime_ms < EVIDENCE_GRACE_S * 1000
