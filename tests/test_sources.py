"""The registry is the only place that lists sources: a toy source, written here, goes
through discovery, adoption, scans, ``ssa classify``, ``ssa watch``'s options, the
samples and the prompt hook's listing without any other module changing."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import msgspec
import pytest

from actors import Gateway
from actors.agents.sessions import CwdCache, find_sessions
from actors.cli import app as cli
from actors.monitors.where import UpstreamWhere, describe, project_of
from actors.testing.samples import append_typed_turn, write_sample_catalog
from actors.upstream.catalog import default_catalogs, discover
from actors.upstream.common import Unit
from actors.upstream.jsonl import line_reading
from actors.upstream.reading import Reading
from actors.upstream.scan import line_classifier
from actors.upstream.source import Candidate, Source, glob_sessions
from actors.upstream.sources import BUILT_IN, all_sources, find_source, registered
from tests.conftest import WATCHER

# --- the toy format: one ".toy" file per session; "> text" a person typed, "< text" a reply


def classify_toy_line(line: bytes) -> Unit:
    if line.startswith(b"> "):
        return Unit(human=True, reason="typed", text=line[2:].decode())
    if line.startswith(b"< "):
        return Unit(human=False, reason="reply")
    return Unit(human=False, reason="other")


def toy_locations(env: Mapping[str, str], home: str) -> list[str]:
    return [env["TOY_HOME"] if "TOY_HOME" in env else os.path.join(home, ".toy")]


def toy_discover(root: str) -> Iterator[Candidate]:
    return glob_sessions("toy", root, "*.toy", str)


def toy_project(lines: list[bytes]) -> str | None:
    first = lines[0] if lines else b""
    return first[len(b"# cwd "):].decode() if first.startswith(b"# cwd ") else None


def toy_head(path: str) -> tuple[str | None, int | None]:
    with open(path, "rb") as file:
        return toy_project([file.readline().rstrip(b"\n")]), None


def toy_sample(root: Path) -> tuple[str, str]:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "demo.toy"
    path.write_bytes(b"# cwd /home/user/toy\n> start here\n< ok\n")
    return str(path), "demo"


def toy_type(path: str, thread_id: str, text: str) -> None:
    with open(path, "ab") as file:
        file.write(b"> " + text.encode() + b"\n")


@functools.cache
def toy_reading() -> Reading:
    return line_reading(classify_toy_line, project=toy_project, sample=toy_sample,
                        type_turn=toy_type)


TOY = Source(name="toy", title="Toy", flag="toy", metavar="DIR", holds="file",
             locations=toy_locations, discover=toy_discover, no_link="never refused",
             reading=toy_reading, head=toy_head)


@pytest.fixture
def toy() -> Iterator[Source]:
    with registered(TOY) as source:
        yield source


def _catalog(tmp_path: Path) -> Path:
    root = tmp_path / "toy"
    root.mkdir()
    (root / "s1.toy").write_bytes(b"# cwd /work/toy-project\n> old turn\n< old reply\n")
    return root


def test_a_toy_source_is_discovered_adopted_scanned_and_classified(
        toy: Source, gateway: Gateway, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    root = _catalog(tmp_path)
    assert default_catalogs({"TOY_HOME": str(root)}, tmp_path)["toy"] == [str(root)]
    [found] = list(discover("toy", root))
    assert found == Candidate(source="toy", path=str(root / "s1.toy"), thread_id="s1")

    key = "agent:main:toy:s1"
    link = gateway.adopt(key, source="toy", path=found.path)
    assert link is not None
    assert (link.source, link.thread_id) == ("toy", "s1")
    assert gateway.watch(WATCHER, key)
    assert gateway.scan_upstream() == []  # the existing lines are the baseline
    toy_type(found.path, "s1", "please add a test")
    with open(found.path, "ab") as file:
        file.write(b"< done\n")
    events = gateway.scan_upstream()
    assert [(e.kind, e.summary) for e in events] == [("human_direct_message",
                                                       "human message via toy")]
    assert len(gateway.pending_notices(WATCHER)) == 1
    assert project_of("toy", found.path, "s1") == "/work/toy-project"
    assert line_classifier("toy")(b"> hi").human

    assert cli.main(["classify", "--source", "toy", found.path]) == 0
    rows = [msgspec.json.decode(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["line"], r["human"], r["reason"]) for r in rows] == [
        (0, False, "other"), (1, True, "typed"), (2, False, "reply"), (3, True, "typed"),
        (4, False, "reply")]


def test_a_toy_source_gets_its_watch_option_sample_and_hook_listing(
        toy: Source, tmp_path: Path) -> None:
    root = _catalog(tmp_path)
    args = cli._parser().parse_args(["watch", "--toy", str(root)])
    assert args.toy == [str(root)]
    samples = write_sample_catalog(tmp_path / "samples")
    assert list(samples) == [s.name for s in all_sources()]
    append_typed_turn(samples["toy"], "typed into the sample")
    assert Path(samples["toy"].path).read_bytes().endswith(b"> typed into the sample\n")
    found = find_sessions({"toy": [root]}, CwdCache(None))
    assert [(f.source, f.thread_id, f.cwd) for f in found] == [("toy", "s1", "/work/toy-project")]


def test_registering_is_scoped_and_refuses_a_second_source_of_a_name() -> None:
    assert find_source("toy") is None
    with registered(TOY):
        assert find_source("toy") is TOY
        assert all_sources() == (*BUILT_IN, TOY)
        with pytest.raises(ValueError, match="already registered"), registered(TOY):
            pass
    assert all_sources() == BUILT_IN


def test_describe_and_unknown_sources_need_no_registry_entry() -> None:
    assert describe(UpstreamWhere(source="gone", path="/x")) == "gone transcript /x"
    assert project_of("gone", "/x", "t") is None
    assert list(discover("gone", Path("/"))) == []
