"""The shapes the newest pins added (found by ``python -m tests.harness.drift``, issue 32 item 5).

Claude Code 2.1.332 writes ``thread`` and ``echoWireToolInputs`` on its
``api-request`` rows; Codex 0.171.0 writes ``metadata.model_search_state``
on its ``response_item`` rows. Neither changes a decision: the rows are
decided as the rows of 2.1.328 / 0.169.0 were (texts shortened, ids kept in
shape).
"""

from __future__ import annotations

import json
from pathlib import Path

from actors.upstream.classify import classify_units
from actors.upstream.claude.classify import classify_claude_line, classify_claude_message

_TS = "2026-12-06T23:54:14.236Z"
_TURN = "01a24dc7-90f5-7f40-bdc3-437b1676cdfd"
_MSG = "msg_01a24dc7-915c-7040-bceb-0f2d9569c48f"
_SESSION = "01a24dc7-8d43-7382-b9f8-0e9d7fd7e8cf"


def test_a_claude_2_1_332_api_request_row_is_not_typed() -> None:
    row = {"type": "api-request", "sessionId": "7c2e5562-2bf0-4898-9dab-80e021351dc4",
           "id": "r1", "timestamp": _TS, "version": "2.1.332",
           "querySource": "repl_main_thread", "shapeHash": "0d27", "params": {},
           "thread": {"type": "none"}, "echoWireToolInputs": False, "keep": 0, "tail": [],
           "cacheControl": {}, "requestDigest": "3c2f"}
    line = classify_claude_line(json.dumps(row).encode())
    mapped = classify_claude_message(row)
    assert (line.human, line.reason) == (mapped.human, mapped.reason) == (False, "not_user")


def _codex_0_171_rows(text: str) -> list[dict[str, object]]:
    """The rows Codex 0.171.0 wrote for one typed prompt (its header, the response item,
    then the completed ``UserMessage``), as the harness saw them."""
    metadata = {"history_sequence": 3, "sampled_through_sequence": 0,
                "retained_source": {"id": {"message_id": _MSG, "turn_id": _TURN, "role": "user"},
                                    "revision": "retained_1", "complete": True},
                "client_authored": False, "user_input_order": 0,
                "mcp_attribution": {"status": "none"}, "model_search_state": "unused"}
    item = {"type": "message", "id": _MSG, "role": "user",
            "content": [{"type": "input_text", "text": text}],
            "internal_chat_message_metadata_passthrough": {
                "turn_id": _TURN, "create_time": 1796601254.236,
                "content_item_kinds": ["user.text"],
                "content_item_metadata": [{"provenance": {"type": "user"}}]}}
    user = {"type": "UserMessage", "id": _MSG,
            "content": [{"type": "text", "text": text, "text_elements": []}]}
    meta = {"account_scoped": True, "session_id": _SESSION, "id": _SESSION, "timestamp": _TS,
            "cwd": "/p", "runtime_workspace_roots": ["/p"], "originator": "codex-tui",
            "cli_version": "0.171.0", "source": "cli", "thread_source": "user",
            "model_provider": "harness", "base_instructions": "You are Codex.",
            "history_mode": "paginated", "context_window": {"window_id": "w1"},
            "git": {"commit_hash": "e385ba5f", "branch": "main"}}
    return [{"timestamp": _TS, "ordinal": 0, "type": "session_meta", "payload": meta},
            {"timestamp": _TS, "ordinal": 7, "type": "response_item", "payload": item,
             "metadata": metadata},
            {"timestamp": _TS, "ordinal": 8, "type": "event_msg",
             "payload": {"type": "item_completed", "thread_id": "t", "turn_id": _TURN,
                         "item": user, "started_at_ms": 1, "completed_at_ms": 2}}]


def test_a_codex_0_171_prompt_counts_once_with_its_new_metadata(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _codex_0_171_rows("hello one")))
    units = [(u["line"], u["human"], u["reason"]) for u in classify_units("codex", str(path))]
    assert [u[1:] for u in units] == [(False, "session_meta"),
                                      (False, "response_item_duplicate"), (True, "typed")]
