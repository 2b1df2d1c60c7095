"""Aider's chat history: every line kind decided as the real 0.86.2 writes it.

The byte shapes below are the ones the real Aider wrote under the harness
(tests/test_agents_aider.py): ``\\n# aider chat started at …``, tool lines
``> …  ``, user blocks ``\\n#### …  \\n``, replies without a prefix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.testing import Interrupt, Reply, SlashCommand, ToolCall, ToolResult, Typed
from actors.upstream.aider.classify import (
    ATOMIC_WRITE_BYTES,
    PAGE_BYTES,
    AiderCursor,
    aider_fingerprint,
    aider_sessions,
    classify_aider_history,
    read_aider_history,
)
from actors.upstream.aider.kit import AiderChatHistory

HEADER = b"\n# aider chat started at 2026-12-02 03:47:39\n\n"
ARGV = b"> /opt/aider/bin/aider --model openai/harness-model --edit-format diff  \n"


def _user(text: str) -> bytes:
    return ("\n#### " + "  \n#### ".join(text.splitlines())).rstrip().encode() + b"  \n"


def _decided(data: bytes) -> list[tuple[str, bool, str, str]]:
    return [(b.kind, u.human, u.reason, b.text) for b, u in classify_aider_history(data)]


def _user_decisions(data: bytes) -> list[tuple[str, str]]:
    return [(u.reason, b.text) for b, u in classify_aider_history(data) if b.kind == "user"]


def test_typed_prompt_and_reply() -> None:
    data = HEADER + ARGV + b"> Aider v0.86.2  \n" + _user("hello one 77") + b"\nanswer one\n\n"
    assert _decided(data) == [
        ("session_start", False, "session_start", "2026-12-02 03:47:39"),
        ("tool", False, "tool_output", ARGV.decode()[2:].rstrip() + "\nAider v0.86.2"),
        ("user", True, "typed", "hello one 77"),
        ("assistant", False, "assistant", "answer one"),
    ]
    (unit,) = [u for _b, u in classify_aider_history(data) if u.human]
    assert unit.text == "hello one 77"
    assert unit.occurred_at is not None


@pytest.mark.parametrize("argv", [b"/home/u/.venv/bin/uvicorn server:app --port 8000",
                                  b"/srv/app/server.py", b"C:\\srv\\bots\\triage_bot.py --repo x"])
def test_a_program_that_calls_aiders_main_is_no_person(argv: bytes) -> None:
    """Adversary (issue 32): ``aider.main.main(argv=["--message", ...])`` in a program logs
    that program's ``sys.argv``; Aider's version line after it passed for an ``aider``
    launch, so the program's message counted as typed."""
    data = HEADER + b"> " + argv + b"  \n> Aider v0.86.2  \n" + _user("fix the login bug")
    assert _user_decisions(data) == [("no_command_line", "fix the login bug")]


def test_multiline_prompt_is_one_block() -> None:
    data = HEADER + ARGV + _user("line one\nline two")
    assert _user_decisions(data) == [("typed", "line one\nline two")]
    (unit,) = [u for _b, u in classify_aider_history(data) if u.human]
    assert unit.text == "line one line two"


def test_skip_all_group_answer_written_as_user_input_is_not_typed() -> None:
    question = "Run shell command? (Y)es/(N)o/(S)kip all/(D)on't ask again [Yes]:"
    data = (HEADER + ARGV + _user("two commands") + b"\nRun these:\n\n"
            + f"> {question} s  \n> echo second  \n".encode() + _user(f"{question} skip")
            + f"> {question} s  \n".encode())
    assert _user_decisions(data) == [("typed", "two commands"),
                                     ("confirm_answer", f"{question} skip")]


def test_url_group_all_answer_is_not_typed() -> None:
    question = "Add URL to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: all"
    assert _user_decisions(HEADER + ARGV + _user(question)) == [("confirm_answer", question)]


def test_typed_confirmation_answers_are_tool_lines() -> None:
    data = HEADER + ARGV + b"> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y  \n"
    assert [u.reason for _b, u in classify_aider_history(data)] == [
        "session_start", "tool_output"]


def test_ask_counts_once_and_its_echo_not() -> None:
    data = HEADER + ARGV + _user("/ask what is up 77") + _user("what is up 77") + b"\nok\n\n"
    assert _user_decisions(data) == [("typed", "/ask what is up 77"),
                                     ("command_echo", "what is up 77")]
    (unit,) = [u for _b, u in classify_aider_history(data) if u.human]
    assert unit.text == "what is up 77"


def test_prefix_of_a_chat_command_is_resolved_like_aider() -> None:
    data = HEADER + ARGV + _user("/as question x") + _user("question x")
    assert [r for r, _t in _user_decisions(data)] == ["typed", "command_echo"]
    ambiguous = HEADER + ARGV + _user("/a question x")  # /add, /architect, /ask
    assert _user_decisions(ambiguous) == [("slash_command", "/a question x")]


def test_same_text_typed_again_after_an_ask_is_typed() -> None:
    data = (HEADER + ARGV + _user("/ask q1") + _user("q1") + b"\nok\n\n" + _user("q1"))
    assert [r for r, _t in _user_decisions(data)] == ["typed", "command_echo", "typed"]


def test_help_question_prompt_is_aiders_own() -> None:
    data = HEADER + ARGV + _user("/help how do I add files") + _user("# Question: how\nmore")
    assert [r for r, _t in _user_decisions(data)] == ["slash_command", "command_echo"]


def test_load_executes_chat_command_echo() -> None:
    data = (HEADER + ARGV + _user("/load cmds.txt") + b"> Executing: /ask from file  \n"
            + _user("from file"))
    assert [r for r, _t in _user_decisions(data)] == ["slash_command", "command_echo"]


@pytest.mark.parametrize(("text", "reason"), [
    ("/run echo hi", "shell"), ("!ls", "shell"), ("/clear", "slash_command"),
    ("/add README.md", "slash_command"), ("/ask", "slash_command"),
    ("/tmp/x is broken", "slash_command"), ("<blank>", "empty_text"),
    ('Find the "AI" comments below (marked with \u2588) in the code files I\'ve shared',
     "watch_files"),
    ("[Inter-session message] hi", "inter_session"),
])
def test_not_typed_inputs(text: str, reason: str) -> None:
    assert _user_decisions(HEADER + ARGV + _user(text)) == [(reason, text)]


@pytest.mark.parametrize("flag", ["--message hello", "-m hello", "--msg hello",
                                  "--message=hello", "-mhello", "--message-file x.txt",
                                  "-f x.txt"])
def test_message_run_is_a_program_session(flag: str) -> None:
    argv = f"> /opt/aider/bin/aider --model m {flag}  \n".encode()
    data = HEADER + argv + _user("hello")
    assert _user_decisions(data) == [("program_session", "hello")]
    (session,) = aider_sessions(data)
    assert session.program
    assert session.refusal == "program_session"


def test_a_block_without_a_logged_command_line_is_not_typed() -> None:
    assert _user_decisions(HEADER + _user("hello")) == [("no_command_line", "hello")]
    assert _user_decisions(_user("hello")) == [("no_session", "hello")]


def test_assistant_heading_is_not_user_input() -> None:
    data = HEADER + ARGV + b"\n#### A heading in the reply\n\ntext\n\n"
    assert _user_decisions(data) == []


def _reply(text: str) -> bytes:
    return b"\n" + text.strip().encode() + b"\n\n"  # ai_output


@pytest.mark.parametrize("reply", [
    "Intro\n\n#### Heading  \nBody",  # a plain line right after it
    "Intro\n#### Heading  \n\nBody",  # a plain line right before it
    "Intro\n\n#### Heading  \n\nBody",  # one blank line after a reply's text
    "Intro\n\n#### One  \n#### Two  \n\nBody\n\n#### Three  \n\nEnd",
], ids=["text-after", "text-before", "blank-around", "several"])
def test_a_reply_heading_with_two_trailing_spaces_is_a_reply_line(reply: str) -> None:
    """Review finding: ``#### Heading  `` in a model reply was decided typed."""
    data = HEADER + ARGV + _user("typed first") + _reply(reply) + _user("typed after")
    decided = _user_decisions(data)
    assert decided[0] == ("typed", "typed first")
    assert decided[-1] == ("typed", "typed after")
    assert {reason for reason, _ in decided[1:-1]} == {"reply_line"}


@pytest.mark.parametrize("before", [
    ARGV, _user("/add a.py") + b"> Added a.py to the chat  \n", _reply("answer"),
    b"> Tokens: 1 sent  \n> more  \n", b"> first line of a tool message\nits second line  \n",
    b"\n#### <blank>  \n",
], ids=["command-line", "command", "reply", "tool", "tool-continued", "empty-prompt"])
def test_a_person_block_after_anything_aider_writes_is_typed(before: bytes) -> None:
    data = HEADER + ARGV + before + _user("typed") + _reply("ok")
    assert _user_decisions(data)[-1] == ("typed", "typed")


@pytest.mark.parametrize("split", [False, True], ids=["one-read", "two-reads"])
def test_a_reply_that_starts_with_a_heading_is_not_a_second_prompt(split: bool) -> None:
    """Review finding: ``ai_output`` of ``#### Plan  \n\n1. do it`` right after the
    prompt read as a second typed turn (and a second notice when written later)."""
    first = HEADER + ARGV + _user("make a plan")
    data = first + _reply("#### Plan  \n\n1. do it") + _user("next")
    if split:
        read = read_aider_history(first)
        assert (read.cursor.last, [u.reason for _b, u in read.human]) == ("user", ["typed"])
        later = read_aider_history(data[read.cursor.offset:], read.cursor)
        decided = [(u.reason, b.text) for b, u in later.decisions if b.kind == "user"]
        assert decided == [("reply_line", "Plan"), ("typed", "next")]
    else:
        assert _user_decisions(data) == [("typed", "make a plan"), ("reply_line", "Plan"),
                                         ("typed", "next")]


def test_the_layout_carries_over_incremental_reads() -> None:
    first = HEADER + ARGV + _user("typed") + b"\nIntro\n"
    second = b"\n#### Heading  \n\nBody\n\n" + _user("next")
    data = first + second
    read = read_aider_history(data[:len(first) + 1])  # up to the blank line after Intro
    assert (read.cursor.offset, read.cursor.last, read.cursor.blanks) == (
        len(first) + 1, "reply", 1)
    later = read_aider_history(data[read.cursor.offset:], read.cursor)
    assert [(u.reason, b.text) for b, u in later.decisions if b.kind == "user"] == [
        ("reply_line", "Heading"), ("typed", "next")]


def test_a_block_seen_to_a_page_boundary_waits_for_the_rest_of_its_write() -> None:
    """Review finding: a multi-line prompt read half written at a line boundary
    counted twice. Linux shows one write(2) page by page, so a prefix a reader sees
    ends on a 4096-byte boundary: a user block ending there waits."""
    head = HEADER + ARGV + b"> Aider v0.86.2  \n"
    first = "a" * (PAGE_BYTES - len(head) - len(b"\n#### ") - len(b"  \n"))
    data = head + _user(first + "\nsecond line of the same prompt")
    cut = len(head) + len(_user(first))
    assert cut == PAGE_BYTES
    read = read_aider_history(data[:cut])
    assert not read.human  # the rest of the write may follow
    rest = read_aider_history(data[read.cursor.offset:], read.cursor)
    assert [u.text for _b, u in rest.human] == [first + " second line of the same prompt"]
    # Elsewhere a small block is decided at once (one write: all or nothing there).
    assert len(read_aider_history(data[:cut] + b"\n" + _user("x")).human) == 2


def test_a_user_block_before_a_torn_line_waits() -> None:
    data = HEADER + ARGV + _user("line one") + b"#### line tw"
    read = read_aider_history(data)
    assert not read.human
    rest = read_aider_history(data[read.cursor.offset:] + b"o  \n", read.cursor)
    assert [u.text for _b, u in rest.human] == ["line one line two"]


def test_sessions_restore_and_program_runs_append() -> None:
    data = (HEADER + ARGV + _user("one") + HEADER
            + b"> aider --restore-chat-history  \n" + _user("two")
            + HEADER + b"> aider --message three  \n" + _user("three"))
    sessions = aider_sessions(data)
    assert [(s.program, s.refusal) for s in sessions] == [(False, None), (False, None),
                                                          (True, "program_session")]
    assert len({s.id for s in sessions}) == 3
    assert [r for r, _t in _user_decisions(data)] == ["typed", "typed", "program_session"]


def test_incremental_reads_decide_each_block_once() -> None:
    data = HEADER + ARGV + _user("one") + b"\nanswer\n\n> Tokens: 1 sent  \n" + _user("two")
    whole = [(b.offset, u.reason) for b, u in classify_aider_history(data)]
    seen: list[tuple[int, str]] = []
    cursor: AiderCursor | None = None
    for cut in range(1, len(data) + 1):  # every prefix, as a growing file is read
        start = cursor.offset if cursor else 0
        read = read_aider_history(data[start:cut], cursor)
        seen += [(b.offset, u.reason) for b, u in read.decisions]
        cursor = read.cursor
    assert [s for s in seen if s[1] != "tool_output" and s[1] != "assistant"] == [
        w for w in whole if w[1] != "tool_output" and w[1] != "assistant"]
    assert sum(1 for _o, r in seen if r == "typed") == 2


def test_torn_last_line_waits() -> None:
    data = HEADER + ARGV + b"\n#### half a pro"
    read = read_aider_history(data)
    assert not read.human
    assert read.cursor.offset <= len(data) - len(b"#### half a pro")
    rest = read_aider_history(data[read.cursor.offset:] + b"mpt  \n", read.cursor)
    assert [u.text for _b, u in rest.human] == ["half a prompt"]


def test_long_user_block_at_the_end_waits_for_the_next_line() -> None:
    long_text = "x" * ATOMIC_WRITE_BYTES
    data = HEADER + ARGV + _user(long_text)
    assert not read_aider_history(data).human
    assert len(read_aider_history(data, final=True).human) == 1
    assert len(read_aider_history(data + b"\nreply\n").human) == 1


def test_fingerprint_is_the_first_header() -> None:
    data = HEADER + ARGV
    assert aider_fingerprint(data) == aider_fingerprint(data + _user("more"))
    assert aider_fingerprint(b"\n# aider chat start") is None
    assert aider_fingerprint(b"not aider\n") is None
    assert aider_fingerprint(data) != aider_fingerprint(data.replace(b"03:47", b"03:48"))


def test_builder_writes_what_the_classifier_reads(tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    history = AiderChatHistory(path)
    history.append(Typed("typed one"), Reply("answer"),
                   ToolCall("shell", {"command": "echo hi"}, "c1"), ToolResult("c1", "hi"),
                   SlashCommand("ask", "a question"), Reply("ok"), SlashCommand("clear"),
                   Interrupt())
    history.confirm_group_echo()
    history.start_session("/usr/bin/aider --message program text")
    history.append(Typed("program text"))
    assert path.stat().st_mode & 0o777 == 0o600
    reasons = [(u.reason, b.text) for b, u in classify_aider_history(path.read_bytes())
               if b.kind == "user"]
    assert [r for r, _t in reasons] == ["typed", "typed", "command_echo", "slash_command",
                                        "confirm_answer", "program_session"]
