"""OpenCode 1.1.65's JSON-file store, classified per message with the monitor's rules.

Expected decisions were established by reading every message and part file
of the fixture (``../shared/fixtures/upstream/opencode/opencode-1.1.65-storage``)
next to PROVENANCE.md's description of how each session was produced.
"""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import msgspec
import pytest

from actors.cli.app import main
from actors.upstream.opencode.legacy_json import classify_json_session, load_json_messages
from tests import conftest

STORE = conftest.FIXTURES / "opencode" / "opencode-1.1.65-storage"

T = "typed"
EXPECTED: dict[str, list[tuple[str, str]]] = {
    # ACP session: a visible request (typed), an image-only turn, and an embedded
    # resource that 1.1.65 stores as bare text (counts: a known limit).
    "ses_dd452a71fffedoiirWANmYOPX4": [
        ("msg_22bad591d001nlZVQkXdWDEWlW", T), ("msg_22bad5926001kNf5NWVPBpWZmz", "not_user"),
        ("msg_22bad597d0017Cb2BVEE3XuXTn", "image_only"),
        ("msg_22bad597f001gm714PsCgLQG1R", "not_user"),
        ("msg_22bad59b0001q71yPEzLGWOXW4", T), ("msg_22bad59b3001LbayTSt0Nl7ZFm", "not_user")],
    # ACP session: a prompt, a prompt with an attached file, and a second prompt.
    "ses_dd4539991ffed3rSdqhFLOnKuq": [
        ("msg_22bac66ab001mPHiTpolPpMQAD", T), ("msg_22bac66b4001kzYPOLnNBcK2zp", "not_user"),
        ("msg_22bac670f001Ow841VKFp70RAP", T), ("msg_22bac671c0017exmFHXwv2XSDX", "not_user"),
        ("msg_22bac6776001E4PnyFEJ52BxqR", T), ("msg_22bac677b0014Kaz1j1zKDb4Ws", "not_user")],
    # The two sub-agent (child) sessions of the server-API session never count.
    "ses_dd453a73effeJ2q2pb1uto7mJI": [
        ("msg_22bac58c2001GTL8eUWAXb0P53", "child_session"),
        ("msg_22bac58c300114hJN3PXYYNJks", "child_session")],
    "ses_dd453aa34ffeUIBM7SFcQuSOM5": [
        ("msg_22bac55d1001GRp3uimjA704jI", "child_session"),
        ("msg_22bac55d900182zXgUXQALuJyA", "child_session")],
    # The server-API session: typed prompts, an @file-only turn, an image-only
    # turn, @general, [[bash]]/[[task]] prompts, a sub-agent slash command
    # (subtask), a synthetic turn, the user-run shell sentinel, and a noReply
    # injection (indistinguishable from typed text in storage: a known limit).
    "ses_dd453b2f4ffeobJR6XPM6HOxvT": [
        ("msg_22bac4d15001RhoxZbR1JE3sWv", T), ("msg_22bac4d46001GbWcL7IUDfxYeV", "not_user"),
        ("msg_22bac4ebf001Kr3uwdabksCWGC", T), ("msg_22bac4ec4001jsXFjI4qqzg68g", "not_user"),
        ("msg_22bac501a0018RruBTIdoGHlPi", "file_mention_only"),
        ("msg_22bac50200014thfFqUNvdZTur", "not_user"),
        ("msg_22bac5173001Pyeyngd9HIYir7", "image_only"),
        ("msg_22bac51760011PfMm7fA0hWSeC", "not_user"),
        ("msg_22bac52d0001IThRnRGMaWIW2a", T), ("msg_22bac52d5001smEMMWhHAfD3rk", "not_user"),
        ("msg_22bac542600166kFbMCZCNVXEu", T), ("msg_22bac5428001T2bG2oyJmRDU04", "not_user"),
        ("msg_22bac5468001AgcSLKAUGaqJxD", "not_user"),
        ("msg_22bac55bb001By80PiAN6jYxU1", T), ("msg_22bac55c0001q6kct61mNONSvP", "not_user"),
        ("msg_22bac5608001CvBaynp1yeBfwe", "not_user"),
        ("msg_22bac575d001AG4aTTtyLtkScG", T), ("msg_22bac5761001XbDb9Ba8ERxY50", "not_user"),
        ("msg_22bac58bb001GD3H3OedNHg5py", "subtask"),
        ("msg_22bac58bf001PAsKpvlme5IOdB", "not_user"),
        ("msg_22bac58e2001DtR54Qs7aA2Mzp", "synthetic"),
        ("msg_22bac58e7001qN60ylXA6H0OGP", "not_user"),
        ("msg_22bac5a41001hgoIn1wTa0ZM6O", "shell"), ("msg_22bac5a42001xWT5vybA23LN2J", "not_user"),
        ("msg_22bac5b76001dsrZY28BzrP2Of", T), ("msg_22bac5ca7001S0HhVlpkkVCTQZ", T),
        ("msg_22bac5cad001dhpJOFiKDThtSR", "not_user")],
}


def test_every_session_of_the_store_is_covered() -> None:
    assert sorted(p.name for p in (STORE / "storage" / "message").iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("session_id", sorted(EXPECTED))
def test_every_message_decision_of_the_json_store(session_id: str) -> None:
    decisions = classify_json_session(STORE, session_id)
    assert [(mid, unit.reason) for mid, unit in decisions] == EXPECTED[session_id]
    assert [unit.human for _, unit in decisions] == [
        reason == T for _, reason in EXPECTED[session_id]]


def test_child_sessions_are_flagged_and_unknown_sessions_refused() -> None:
    assert load_json_messages(STORE, "ses_dd453a73effeJ2q2pb1uto7mJI")[1] == "child_session"
    assert load_json_messages(STORE, "ses_dd453b2f4ffeobJR6XPM6HOxvT")[1] is None
    with pytest.raises(LookupError):
        load_json_messages(STORE, "ses_nope")


def test_ssa_classify_reads_a_json_storage_directory() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["classify", "--source", "opencode", str(STORE),
                     "--session", "ses_dd4539991ffed3rSdqhFLOnKuq"]) == 0
    rows = [msgspec.json.decode(line) for line in out.getvalue().splitlines()]
    assert [r["human"] for r in rows] == [True, False, True, False, True, False]


def test_an_opencode_run_session_of_the_json_store_is_program_driven(tmp_path: Path) -> None:
    # opencode 1.1.65's `opencode run` creates its session with this ruleset (read from
    # the npm binary: sdk.session.create({title, permission: rules2})); the JSON store
    # keeps it in session/<project>/<id>.json, as 1.18's keeps it in session.permission.
    store = tmp_path / "store"
    shutil.copytree(STORE, store)
    session = "ses_dd4539991ffed3rSdqhFLOnKuq"
    (session_file,) = (store / "storage" / "session").glob(f"*/{session}.json")
    info = json.loads(session_file.read_bytes())
    info["permission"] = [{"permission": name, "action": "deny", "pattern": "*"}
                          for name in ("question", "plan_enter", "plan_exit")]
    session_file.write_text(json.dumps(info))
    assert load_json_messages(store, session)[1] == "program_session"
    decisions = classify_json_session(store, session)
    assert not [unit for _, unit in decisions if unit.human]
    assert {unit.reason for _, unit in decisions} == {"program_session"}
    # A subagent's own ruleset (todowrite/task denied) is no program's.
    info["permission"] = [{"permission": "task", "action": "deny", "pattern": "*"}]
    session_file.write_text(json.dumps(info))
    assert load_json_messages(store, session)[1] is None
