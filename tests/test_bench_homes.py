"""The benchmark's synthetic homes (``scripts/bench_homes.py``) are what each source reads:
every session is discovered, gets a link, and holds exactly its typed turns."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.upstream.reading import Baseline
from actors.upstream.sources import find_source
from scripts.bench_homes import MIXES, SHARES, TURNS, append_typed, write_home


@pytest.mark.parametrize("mix", MIXES)
def test_every_session_is_discovered_linked_and_holds_its_typed_turns(tmp_path: Path,
                                                                      mix: str) -> None:
    home = write_home(tmp_path, 80, seed=7, mix=mix)
    assert len(home.transcripts) == 80
    assert set(home.counts()) == {name for name, _ in SHARES[mix]}
    for name, catalog in home.catalogs.items():
        source = find_source(name)
        assert source is not None
        found = {(c.path, c.thread_id) for c in source.discover(catalog)}
        mine = {(str(t.path), t.thread_id) for t in home.transcripts if t.source == name}
        assert found == mine, name
    for transcript in home.transcripts[::7]:
        source = find_source(transcript.source)
        assert source is not None
        reading = source.reading()
        base = reading.baseline(str(transcript.path), transcript.thread_id, True, 1000)
        assert isinstance(base, Baseline), (transcript, base)
        assert base.refusal is None, (transcript, base)
        session = transcript.thread_id if transcript.source == "crush" else None
        before = [d for d in reading.classify(str(transcript.path), session, 10_000)
                  if d.get("human")]
        assert len(before) == TURNS, transcript
        append_typed(transcript, "one more typed turn")
        after = [d for d in reading.classify(str(transcript.path), session, 10_000)
                 if d.get("human")]
        assert len(after) == TURNS + 1, transcript
