"""``ssa watch``: a session file reached twice (through a symbolic link in a catalog, or
a catalog given twice) is one session: adopted once, one notice per typed turn."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import msgspec

from actors.cli.watch import run_watch
from actors.testing import AiderChatHistory, Reply, Typed
from actors.upstream.sources import all_sources


def _args(db: Path, **catalogs: list[str]) -> argparse.Namespace:
    names: dict[str, list[str] | None] = {s.name: None for s in all_sources()}
    names.update(catalogs)
    return argparse.Namespace(db=db, watcher="agent:main:main", interval=0.001, scans=1,
                              json=True, **names)


def test_a_repository_linked_into_the_catalog_is_adopted_once(tmp_path: Path) -> None:
    repo = tmp_path / "projects" / "repo"
    repo.mkdir(parents=True)
    history = AiderChatHistory(repo / ".aider.chat.history.md")
    history.append(Typed("earlier"), Reply("ok"))
    (tmp_path / "projects" / "current").symlink_to(repo)
    db = tmp_path / "s.sqlite"
    args = _args(db, aider=[str(tmp_path / "projects"), str(repo)])

    class TypeOnSummary(io.StringIO):
        def write(self, text: str) -> int:
            if text.startswith('{"adopted"'):
                history.append(Typed("typed while watched"))
            return super().write(text)

    out = TypeOnSummary()
    assert run_watch(args, out=out, err=io.StringIO()) == 0
    records = [msgspec.json.decode(line) for line in out.getvalue().splitlines()]
    assert records[0]["adopted"] == {"aider": 1}, records[0]
    notices = [r for r in records if "notice" in r]
    assert len(notices) == 1, records
