"""``ssa demo``: a self-contained walk-through of the core protocol."""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path

import msgspec

from actors.errors import SessionStateError
from actors.facade.gateway import Gateway
from actors.testing.samples import append_typed_turn, write_sample_catalog
from actors.upstream.sources import all_sources

__all__ = ["run_demo"]

MANAGER = "agent:main:main"
WORKER = "agent:main:subagent:worker"


def _say(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _step(n: int, title: str, why: str) -> None:
    _say()
    _say(f"{n}. {title}")
    _say(f"   {why}")


def _show(label: str, lines: list[str]) -> None:
    _say(f"   {label}: {len(lines)}")
    for line in lines:
        _say(f"     | {line}")


_COUNT = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def _upstream_step(gw: Gateway, tmp: Path) -> None:
    sources = all_sources()
    titles = [s.title for s in sources]
    _step(4, f"The gateway adopts sessions of {_COUNT.get(len(titles), str(len(titles)))} "
          "other coding agents.",
          f"{', '.join(titles[:-1])} and {titles[-1]} sessions are written to a sample "
          "catalog; each adopted session is linked at its current end and watched.")
    samples = write_sample_catalog(tmp / "catalog")
    for source, sample in samples.items():
        key = f"agent:main:{source}:{sample.thread_id}"
        link = gw.adopt(key, source=source, path=sample.path, thread_id=sample.thread_id)
        gw.watch(MANAGER, key)
        _say(f"   adopted {key} ({'linked' if link else 'not linked'})")
    _say(f"   A person types straight into the {sources[0].title} session.")
    append_typed_turn(samples[sources[0].name], "Please also bump the version")
    recorded = gw.scan_upstream()
    _say(f"   scan_upstream recorded: {[e.summary for e in recorded]}")
    _show("manager's queued notices", gw.pending_notices(MANAGER))
    _show("drained", gw.drain(MANAGER))


def run_demo(db: Path | str | None) -> int:
    """Run the walk-through on ``db`` (default: a temporary file); returns 0.

    Args:
        db: a new SQLite file, or a ``postgresql://`` URL of a schema that
            holds no sessions yet; ``None``: a temporary file.

    Raises:
        SessionStateError: the file exists, or the schema holds sessions.
        StorageError: the database cannot be opened.

    Blocks the calling thread for well under a second (SQLite); prints to stdout.
    """
    if isinstance(db, Path) and db.exists():
        raise SessionStateError(f"{db} exists; the demo writes a new database, give a new path")
    with tempfile.TemporaryDirectory(prefix="ssa-demo-") as tmp:
        path = db if db is not None else Path(tmp) / "state.sqlite"
        wakes: list[str] = []
        with Gateway.open(path, on_wake=wakes.append, monitor=False) as gw:
            if gw.sessions_list():
                raise SessionStateError(f"{gw.location} holds sessions; the demo needs an "
                                        "empty signal log (give a new ?schema=NAME)")
            _say(f"Session state awareness demo (database: {gw.location})")
            _step(1, "A manager spawns a child session.",
                  "The manager's cursor on the child is seeded at the spawn: it is in sync.")
            spawn = gw.spawn_subagent(MANAGER, WORKER, run_id="demo-run-1")
            assert spawn is not None
            _say(f"   child_spawned recorded at sequence {spawn.sequence}")
            _show("manager's queued notices", gw.pending_notices(MANAGER))

            _step(2, "A person types straight into the child, twenty times in a row.",
                  "Twenty changes, one notice: its text stays byte-stable while pending.")
            for _ in range(20):
                gw.human_message(WORKER, channel="telegram")
            _show("manager's queued notices", gw.pending_notices(MANAGER))
            _say(f"   heartbeat wakes for the manager: {len(wakes)}")

            _step(3, "The manager's turn drains the notice and reconciles.",
                  "The notice froze at the first change; acknowledging moves the cursor only "
                  "that far, so the 19 later changes open exactly one follow-up.")
            _show("drained", gw.drain(MANAGER))
            _show("follow-up queued", gw.pending_notices(MANAGER))
            status = gw.session_status(WORKER, changes_since=spawn.sequence)
            assert status.state_changes is not None
            events = status.state_changes.events
            _say(f"   session_status(changes_since={spawn.sequence}): stateVersion "
                 f"{status.state_version}, {len(events)} events, historyGap "
                 f"{status.state_changes.history_gap}")
            _say("   first event as JSON: " + msgspec.json.encode(events[0]).decode())
            _show("drained", gw.drain(MANAGER))
            _show("left", gw.pending_notices(MANAGER))

            _upstream_step(gw, Path(tmp))

            _step(5, "Work interleaves with a notice.",
                  "A goal change queues a notice; a person types before the manager's turn: "
                  "the drain acknowledges the first and opens exactly one follow-up.")
            gw.set_goal(WORKER, action="updated")
            gw.human_message(WORKER, channel="telegram")
            _show("drained", gw.drain(MANAGER))
            _show("follow-up queued", gw.pending_notices(MANAGER))

        _step(6, "The gateway restarts with that follow-up still pending.",
              "Notices are durable cursors in SQLite, not process memory: the reopened "
              "gateway shows the follow-up again.")
        with Gateway.open(path, monitor=False) as gw:
            _show("manager's queued notices after reopening", gw.pending_notices(MANAGER))
            _show("drained", gw.drain(MANAGER))
            _show("left", gw.pending_notices(MANAGER))
        _say()
        if db is None:
            _say("Done. The demo's temporary database is gone; run `ssa demo --db PATH` to keep "
                 "one and explore it with `ssa list --db PATH` and `ssa status KEY --db PATH`.")
        else:
            where = shlex.quote(str(db))
            _say(f"Done. Explore it: ssa list --db {where}; ssa status {WORKER} "
                 f"--changes-since 1 --db {where}")
    return 0
