"""Message protocols: every message belongs to exactly one inbound union."""

from __future__ import annotations

import typing

import msgspec
import pytest

from actors.engine import messages as am
from persistence import _messages as pm


def _subclasses(base: type) -> set[type]:
    found: set[type] = set()
    for cls in base.__subclasses__():
        found |= {cls} | _subclasses(cls)
    return found


def test_actor_unions_cover_every_actor_message() -> None:
    unions = (am.SessionMessage, am.CursorMessage, am.WakerMessage)
    members = [m for u in unions for m in (typing.get_args(u) or (u,))]
    assert sorted(m.__name__ for m in members) == sorted(
        c.__name__ for c in _subclasses(am._Message))
    assert len(members) == len(set(members))


def test_the_command_union_covers_every_persistence_command() -> None:
    assert set(typing.get_args(pm.Command)) == _subclasses(pm._Message)


def test_messages_are_frozen_and_round_trip_through_their_decoder() -> None:
    message = am.EnqueueEvent(text="Cron completed", context_key="cron:1")
    assert am.session_decoder.decode(msgspec.json.encode(message)) == message
    command = pm.Acknowledge(watcher_key="agent:main:main", targets=(("agent:main:x", "main"),))
    assert pm.command_decoder.decode(msgspec.json.encode(command)) == command
    with pytest.raises(AttributeError):
        command.watcher_key = "other"  # type: ignore[misc]
