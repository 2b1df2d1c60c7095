"""Synthetic homes of many adopted sessions for ``scripts/bench_scale.py`` (sections 1-3).

Two mixes, written with the test kit's builders so every file has its tool's
real shape:

* ``classic``: 60% Claude Code transcripts over N/25 project folders, 40%
  Codex rollouts in 30 date folders (the mix every earlier figure used);
* ``all``: the same N over six sources: 30% Claude Code, 20% Codex and
  12.5% each of Gemini CLI (chats of N/25 projects, each project's
  ``logs.json`` holding its sessions' queries), Qwen Code (chats of N/25
  projects, each session with its ``runtime.json``), Aider (one repository per
  history file) and Crush (25 sessions per project store ``.crush/crush.db``).

Every session holds :data:`TURNS` typed-prompt/answer pairs of a few KB.
Writing blocks on file I/O in the caller's thread; nothing here is
thread-safe.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from pathlib import Path

from actors.testing import (
    AiderChatHistory,
    CrushTranscript,
    GeminiSession,
    QwenSession,
    Reply,
    Typed,
)
from actors.upstream.aider.paths import history_thread_id
from actors.upstream.gemini.kit import type_turn as gemini_type_turn
from actors.upstream.reading import Reading
from actors.upstream.sources import find_source
from tests._upstream_rows import claude_assistant, claude_user, codex_paginated_user

__all__ = ["MIXES", "Home", "Transcript", "append_typed", "write_home"]

MIXES = ("classic", "all")
"""The mixes :func:`write_home` writes."""
SESSIONS_PER_PROJECT = 25
"""Sessions per project folder (Claude Code, Gemini CLI, Qwen Code) or store (Crush)."""
DAY_FOLDERS = 30
"""Codex date folders the rollouts are spread over."""
TURNS = 3
"""User + assistant turn pairs per synthetic session."""
SHARES = {
    "classic": (("claude", 0.6), ("codex", 0.4)),
    "all": (("claude", 0.3), ("codex", 0.2), ("gemini", 0.125), ("qwen", 0.125),
            ("aider", 0.125), ("crush", 0.125)),
}
"""Each mix's sources and their shares of N (the last takes the rounding rest)."""


@dataclass(frozen=True)
class Transcript:
    """One synthetic session.

    Attributes:
        source: the source's name (``claude``, ``codex``, ``gemini``...).
        path: its file (a Crush session: its store).
        thread_id: its id as discovery gives it.
    """

    source: str
    path: Path
    thread_id: str

    @property
    def key(self) -> str:
        """The session key ``ssa watch`` gives it (``agent:main:<source>:<id>``)."""
        return f"agent:main:{self.source}:{self.thread_id}"


@dataclass(frozen=True)
class Home:
    """A synthetic catalog under one root.

    Attributes:
        root: the directory it was written in.
        mix: ``classic`` or ``all``.
        catalogs: each source's catalog directory (what ``ssa watch --<source>`` takes).
        transcripts: every session, in the order written.
    """

    root: Path
    mix: str
    catalogs: dict[str, Path]
    transcripts: tuple[Transcript, ...]

    def count(self, source: str) -> int:
        """How many sessions of ``source`` it holds. Pure."""
        return sum(1 for t in self.transcripts if t.source == source)

    def counts(self) -> dict[str, int]:
        """Sessions per source, for the sources it holds. Pure."""
        return {name: self.count(name) for name in self.catalogs}

    def watch_flags(self) -> list[str]:
        """``--<source> DIR`` for every catalog (``ssa watch``'s arguments). Pure."""
        return [arg for name, path in self.catalogs.items() for arg in (f"--{name}", str(path))]


def prose(rng: random.Random, words: int) -> str:
    """``words`` words of filler text (deterministic for ``rng``). Pure."""
    vocabulary = ("the", "build", "test", "fails", "because", "config", "path", "module",
                  "returns", "value", "when", "error", "function", "update", "cache", "file")
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def _codex_meta(thread_id: str, when: str) -> bytes:
    """A Codex ``session_meta`` first line of an interactive (``cli``) thread (a
    0.152-style paginated rollout, the shape ``actors.testing.samples`` writes)."""
    row_ = {"timestamp": when, "type": "session_meta", "payload": {
        "id": thread_id, "timestamp": when, "cwd": "/home/user/work",
        "originator": "codex-tui", "cli_version": "0.152.1", "source": "cli",
        "thread_source": "user", "history_mode": "paginated"}}
    return json.dumps(row_, separators=(",", ":")).encode() + b"\n"


def _codex_assistant(text: str, ordinal: int, when: str) -> bytes:
    """A Codex assistant ``response_item`` message (``output_text`` content)."""
    row_ = {"timestamp": when, "ordinal": ordinal, "type": "response_item",
            "payload": {"type": "message", "id": f"msg_{uuid.uuid4()}", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}}
    return json.dumps(row_).encode() + b"\n"


def _reading(name: str) -> Reading:
    """The registered source ``name``'s heavy half (raises ``KeyError`` when unknown)."""
    source = find_source(name)
    if source is None:
        raise KeyError(name)
    return source.reading()


class _Writer:
    """Writes the sessions of one home; one method per source, ``i`` the session's index."""

    def __init__(self, root: Path, sessions: int, rng: random.Random) -> None:
        self.root, self.rng = root, rng
        self.projects = max(1, sessions // SESSIONS_PER_PROJECT)
        self.catalogs = {"claude": root / "claude" / "projects",
                         "codex": root / "codex" / "sessions",
                         "gemini": root / "gemini" / "tmp", "qwen": root / "qwen" / "projects",
                         "aider": root / "aider", "crush": root / "crush"}
        self._stores: dict[Path, int] = {}

    def _id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def claude(self, i: int) -> Transcript:
        thread = self._id()
        path = (self.catalogs["claude"] / f"-home-user-work-project{i % self.projects:04d}"
                / f"{thread}.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(claude_user(prose(self.rng, 12), session_id=thread)
                                  + claude_assistant(prose(self.rng, 90), session_id=thread)
                                  for _ in range(TURNS)))
        return Transcript("claude", path, thread)

    def codex(self, i: int) -> Transcript:
        thread = self._id()
        day = 1 + i % DAY_FOLDERS
        when = f"2026-11-{day:02d}T08:00:00.000Z"
        path = (self.catalogs["codex"] / "2026" / "11" / f"{day:02d}"
                / f"rollout-2026-11-{day:02d}T08-00-00-{thread}.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_codex_meta(thread, when) + b"".join(
            codex_paginated_user(prose(self.rng, 12), ordinal=10 * k)
            + _codex_assistant(prose(self.rng, 90), 10 * k + 2, when) for k in range(TURNS)))
        return Transcript("codex", path, thread)

    def gemini(self, i: int) -> Transcript:
        session_id = self._id()
        project = self.catalogs["gemini"] / f"project{i % self.projects:04d}"
        chats = project / "chats"
        chats.mkdir(parents=True, exist_ok=True)
        root = f"/home/user/work/project{i % self.projects:04d}"
        (project / ".project_root").write_text(root)
        path = chats / f"session-2026-11-30T08-00-{session_id[:8]}{i:06d}.jsonl"
        session = GeminiSession(path, session_id=session_id, project=root)
        for _ in range(TURNS):
            gemini_type_turn(str(path), path.stem, prose(self.rng, 12), session=session)
            session.append(Reply(prose(self.rng, 90)))
        return Transcript("gemini", path, path.stem)

    def qwen(self, i: int) -> Transcript:
        session_id = self._id()
        cwd = f"/home/user/work/project{i % self.projects:04d}"
        path = self.catalogs["qwen"] / cwd.replace("/", "-") / "chats" / f"{session_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        session = QwenSession(path, session_id=session_id, cwd=cwd)
        typed = _reading("qwen").type_turn
        for _ in range(TURNS):
            typed(str(path), session_id, prose(self.rng, 12))
            session.append(Reply(prose(self.rng, 90)))
        return Transcript("qwen", path, session_id)

    def aider(self, i: int) -> Transcript:
        repo = self.catalogs["aider"] / f"repo{i:06d}"
        repo.mkdir(parents=True, exist_ok=True)
        path = repo / ".aider.chat.history.md"
        history = AiderChatHistory(path)
        typed = _reading("aider").type_turn
        history.start_session()
        for _ in range(TURNS):
            typed(str(path), history_thread_id(str(path)), prose(self.rng, 12))
            history.append(Reply(prose(self.rng, 90)))
        return Transcript("aider", path, history_thread_id(str(path)))

    def crush(self, i: int) -> Transcript:
        data = self.catalogs["crush"] / f"project{(i // SESSIONS_PER_PROJECT):04d}" / ".crush"
        data.mkdir(parents=True, exist_ok=True)
        session_id = self._id()
        with CrushTranscript(data / "crush.db", session_id=session_id) as session:
            for _ in range(TURNS):
                session.append(Typed(prose(self.rng, 12)), Reply(prose(self.rng, 90)))
        return Transcript("crush", data / "crush.db", session_id)


def write_home(root: Path, sessions: int, seed: int, mix: str = "classic") -> Home:
    """Write ``sessions`` synthetic sessions of ``mix`` under ``root``.

    Args:
        root: an empty directory the caller owns.
        sessions: how many sessions in all (split by :data:`SHARES`).
        seed: makes the ids and text reproducible.
        mix: one of :data:`MIXES`.

    Returns:
        The :class:`Home`. Blocks on file I/O in the caller's thread.

    Raises:
        KeyError: an unknown ``mix``.
        OSError, apsw.Error: a file cannot be written.
    """
    shares = SHARES[mix]
    writer = _Writer(root, sessions, random.Random(seed))
    counts = [round(sessions * share) for _, share in shares[:-1]]
    counts.append(sessions - sum(counts))
    out: list[Transcript] = []
    for (name, _), count in zip(shares, counts, strict=True):
        write = getattr(writer, name)
        out += [write(i) for i in range(count)]
    catalogs = {name: writer.catalogs[name] for name, _ in shares}
    return Home(root, mix, catalogs, tuple(out))


def append_typed(transcript: Transcript, text: str) -> None:
    """Append one turn a person typed to ``transcript``, in its tool's shape (the
    source's own ``type_turn``). Blocks on I/O.

    Raises:
        OSError, apsw.Error: it cannot be written.
    """
    if transcript.source == "claude":
        with open(transcript.path, "ab") as handle:
            handle.write(claude_user(text, session_id=transcript.thread_id))
        return
    _reading(transcript.source).type_turn(str(transcript.path), transcript.thread_id, text)
