"""Prompts a tool sends for the person (a click, a menu entry, an init command) are not typed.

Issue 32 item 4. Each source's table of fixed prompts
(``actors/upstream/<source>/prompts.py``) names the file and versions each
text was read from; these tests write the turn as each tool's builder writes
it and check its decision (``tool_prompt``), and that a person's own text
that only quotes part of such a prompt still counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.testing import Reply, SlashCommand, ToolResult, Typed
from actors.upstream.aider.classify import classify_aider_history, read_aider_history
from actors.upstream.aider.kit import GUI_COMMAND_LINE, LINT_PROMPT, AiderChatHistory
from actors.upstream.claude.classify import classify_claude_line
from actors.upstream.claude.kit import ClaudeCodeTranscript
from actors.upstream.claude.prompts import CLAUDE_PROMPTS
from actors.upstream.codex.classify import classify_codex_line
from actors.upstream.codex.kit import CodexRollout
from actors.upstream.codex.prompts import CODEX_PROMPTS
from actors.upstream.crush.classify import poll_crush
from actors.upstream.crush.kit import CrushTranscript
from actors.upstream.crush.prompts import CRUSH_PROMPTS
from actors.upstream.fixed_prompts import FILL, FixedPrompt, FixedPrompts
from actors.upstream.opencode.kit import OpenCodeTranscript
from actors.upstream.opencode.prompts import OPENCODE_PROMPTS
from actors.upstream.opencode.store import classify_db_session


def test_fixed_prompts_match_exactly_after_normalizing() -> None:
    table = FixedPrompts([FixedPrompt(text="Create  **{FILL}**\nnow.", action="x", origin="o"),
                          FixedPrompt(text="Fixed\ttext.", action="y", origin="p")])
    assert table.match("  Create **AGENTS.md** now.\n") is not None
    assert table.match("Fixed text.") is not None
    assert table.match("Create ** now.") is None  # a filled place is never empty
    assert table.match("Create **AGENTS.md** now. Also add tests.") is None
    assert table.match("Fixed text") is None
    assert table.match("") is None
    with pytest.raises(ValueError, match="empty fixed prompt"):
        FixedPrompts([FixedPrompt(text=" \n", action="z", origin="q")])
    with pytest.raises(ValueError, match="more than one"):
        FixedPrompts([FixedPrompt(text="{ARGS} and {ARGS}", action="z", origin="q")])


def test_the_persons_arguments_inside_a_fixed_prompt_are_returned() -> None:
    table = FixedPrompts([FixedPrompt(text="Set up.\nFocus:\n{ARGS}\n\nAt {REST}.",
                                      action="/init", origin="o")])
    found = table.find("Set up.\nFocus:\n  the   tests\n\nAt /home/me/x y.")
    assert found is not None
    assert found.args == "the tests"
    empty = table.find("Set up.\nFocus:\n\n\nAt /home/me.")
    assert empty is not None
    assert empty.args == ""
    assert table.find("Set up. Focus: x") is None


# --- Crush --------------------------------------------------------------------------


def _crush(db: Path) -> list[tuple[bool, str]]:
    result = poll_crush(db)
    assert result is not None
    return [(u.human, u.reason) for m, u in result[0] if m.role == "user"]


def test_crush_initialize_project_is_the_tools_prompt(tmp_path: Path) -> None:
    (tmp_path / ".crush").mkdir()
    db = tmp_path / ".crush" / "crush.db"
    with CrushTranscript(db) as crush:
        crush.initialize_project()
        crush.append(Reply("AGENTS.md written"), Typed("now run the tests"))
        crush.initialize_project("CRUSH.md")
    assert _crush(db) == [(False, "tool_prompt"), (True, "typed"), (False, "tool_prompt")]


@pytest.mark.parametrize("prompt", CRUSH_PROMPTS.prompts, ids=lambda p: p.origin)
def test_every_crush_initialize_template_version_is_recognised(prompt: FixedPrompt) -> None:
    rendered = prompt.text.replace(FILL, "NOTES.md")
    assert CRUSH_PROMPTS.match(rendered) is prompt
    assert CRUSH_PROMPTS.match(rendered + "\nAlso list the Makefile targets.") is None
    first_line = rendered.strip().splitlines()[0]
    assert CRUSH_PROMPTS.match(first_line) is None  # a person quoting one line is typed


# --- Aider --------------------------------------------------------------------------


def _aider(path: Path) -> list[tuple[str, bool, str]]:
    return [(b.text, u.human, u.reason)
            for b, u in classify_aider_history(path.read_bytes()) if b.kind == "user"]


def test_aider_lint_report_sent_after_fix_lint_errors_is_not_typed(tmp_path: Path) -> None:
    history = AiderChatHistory(tmp_path / ".aider.chat.history.md")
    history.append(Typed("add a helper"), Reply("Added."))
    history.lint_fix("app.py", "app.py:1:1: F401 'os' imported but unused")
    history.append(Typed("thanks, now the docs"), Reply("Done."))
    decided = [(human, reason) for _, human, reason in _aider(history.path)]
    assert decided == [(True, "typed"), (False, "slash_command"), (False, "tool_prompt"),
                       (True, "typed")]


def test_aider_accepting_the_prefilled_fix_prompt_is_not_typed(tmp_path: Path) -> None:
    history = AiderChatHistory(tmp_path / ".aider.chat.history.md")
    history.append(SlashCommand("test", "pytest -q"), ToolResult("c1", "1 failed"),
                   Typed("What's wrong? Fix"), Reply("Fixed."),
                   Typed("What's wrong? Fix the import too"), Reply("Fixed."))
    assert [(h, r) for _, h, r in _aider(history.path)] == [
        (False, "slash_command"), (False, "tool_prompt"), (True, "typed")]


def test_aider_gui_prompts_count_like_the_terminals(tmp_path: Path) -> None:
    """``aider --gui``: the streamlit process logs ``…/aider/gui.py --gui`` as its command
    line; every chat_input prompt is written by ``Coder.run_stream`` as user input, as
    written (a ``/`` is not a command there), and so are the reflected messages."""
    history = AiderChatHistory(tmp_path / ".aider.chat.history.md",
                               command_line=GUI_COMMAND_LINE)
    history.append(Typed("add a --verbose flag"), Reply("Added."),
                   Typed(f"{LINT_PROMPT}## Running: flake8 cli.py\n\ncli.py:3:1: E302"),
                   Reply("Fixed."),
                   Typed("I ran this command:\n\npytest\n\nAnd got this output:\n\n1 failed\n"),
                   Reply("Fixed."),
                   Typed("/ask is it done?"), Reply("Yes."))
    assert [(h, r) for _, h, r in _aider(history.path)] == [
        (True, "typed"), (False, "tool_prompt"), (False, "tool_prompt"), (True, "typed")]
    # the same /ask in the terminal is a chat command: its text counts, its echo does not
    terminal = AiderChatHistory(tmp_path / "t.md")
    terminal.append(SlashCommand("ask", "is it done?"), Reply("Yes."))
    assert [(t, h, r) for t, h, r in _aider(terminal.path)] == [
        ("/ask is it done?", True, "typed"), ("is it done?", False, "command_echo")]


# --- Codex --------------------------------------------------------------------------


@pytest.mark.parametrize("paginated", [False, True])
def test_codex_init_submits_codex_own_prompt(tmp_path: Path, paginated: bool) -> None:
    rollout = CodexRollout(tmp_path / "rollout.jsonl", paginated=paginated)
    rollout.append(SlashCommand("init"), Reply("Wrote AGENTS.md."), Typed("now commit it"),
                   Reply("Done."))
    units = [classify_codex_line(line) for line in rollout.path.read_bytes().splitlines()]
    assert [u.text for u in units if u.human] == ["now commit it"]
    assert "tool_prompt" in {u.reason for u in units}


@pytest.mark.parametrize("prompt", CODEX_PROMPTS.prompts, ids=lambda p: p.origin)
def test_every_codex_fixed_prompt_is_recognised(prompt: FixedPrompt) -> None:
    assert CODEX_PROMPTS.match(prompt.text) is prompt
    assert CODEX_PROMPTS.match(prompt.text + " Keep it under 100 words.") is None


# --- Claude Code --------------------------------------------------------------------

_CLAUDE_INIT_2_0 = (  # the text older builds wrote as a plain row (the fixed opening + notes)
    "Please analyze this codebase and create a CLAUDE.md file, which will be given to future"
    " instances of Claude Code to operate in this repository.\n\nWhat to add:\n1. Commands"
    " that will be commonly used, such as how to build, lint, and run tests. Include the"
    " necessary commands to develop in this codebase, such as how to run a single test.\n2."
    " High-level code architecture and structure so that future instances can be productive"
    " more quickly. Focus on the \"big picture\" architecture that requires reading multiple"
    " files to understand.\n\nUsage notes:\n- If there's already a CLAUDE.md, suggest"
    " improvements to it.\n- Be sure to prefix the file with the following text:\n\n```\n"
    "# CLAUDE.md\n```")


@pytest.mark.parametrize("expansion", [CLAUDE_PROMPTS.prompts[0].text, _CLAUDE_INIT_2_0])
@pytest.mark.parametrize("meta", [False, True])
def test_claude_init_expansion_is_claude_codes_prompt(tmp_path: Path, expansion: str,
                                                      meta: bool) -> None:
    transcript = ClaudeCodeTranscript(tmp_path / "s.jsonl")
    transcript.append(Typed("hello"), Reply("Hi."))
    transcript.prompt_command("init", expansion, meta=meta)
    transcript.append(Reply("Wrote CLAUDE.md."), Typed("Please analyze this codebase"))
    units = [classify_claude_line(line) for line in transcript.path.read_bytes().splitlines()]
    assert [u.text for u in units if u.human] == ["hello", "Please analyze this codebase"]
    assert [u.reason for u in units][2:4] == ["command", "meta" if meta else "tool_prompt"]


# --- OpenCode -----------------------------------------------------------------------


def test_opencode_init_is_the_tools_prompt_and_its_arguments_the_persons(
        tmp_path: Path) -> None:
    store = OpenCodeTranscript(tmp_path / "opencode.db", directory="/home/user/my project")
    store.append(SlashCommand("init"), Reply("AGENTS.md written."),
                 SlashCommand("init", "mention the\nmigration scripts"), Reply("Updated."),
                 Typed("thanks"))
    decided = [(u.human, u.reason, u.text) for _, u in
               classify_db_session(store.path, store.session_id) if u.reason != "not_user"]
    assert decided == [(False, "tool_prompt", None),
                       (True, "typed", "mention the migration scripts"),
                       (True, "typed", "thanks")]


def test_opencode_older_init_text_never_counts() -> None:
    older = OPENCODE_PROMPTS.prompts[1].text.replace("{FILL}", "150").replace(
        "{REST}", "/Users/me/app\n\nfocus on tests")
    found = OPENCODE_PROMPTS.find(older)
    assert found is not None
    assert found.args == ""


_PLAN = ("Change `main` to read the flag.\n\nThen add a test:\n\n```python\n"
         "def test_flag(): ...\n```")


def test_aider_architect_reply_sent_to_the_editor_is_not_typed(tmp_path: Path) -> None:
    history = AiderChatHistory(tmp_path / ".aider.chat.history.md")
    history.append(SlashCommand("chat-mode", "architect"),
                   ToolResult("m", "Main model: m with architect edit format"),
                   Typed("add a --verbose flag"))
    history.architect_edit(_PLAN)
    quoted = _PLAN.split("\n\n", maxsplit=1)[0]  # the person quotes a part of it
    history.append(Typed(quoted), Reply("Ok."))
    assert [(h, r) for _, h, r in _aider(history.path)] == [
        (False, "slash_command"), (True, "typed"), (False, "architect_edit"), (True, "typed")]


def test_aider_architect_edit_is_told_across_reads(tmp_path: Path) -> None:
    history = AiderChatHistory(tmp_path / ".aider.chat.history.md")
    history.append(Typed("add a --verbose flag"))
    history.architect_edit(_PLAN)
    data = history.path.read_bytes()
    cut = data.index(b"\n#### Change")  # a scan between the reply and the editor's input
    first = read_aider_history(data[:cut])
    rest = read_aider_history(data[first.cursor.offset:], first.cursor, final=True)
    decided = [(u.human, u.reason) for b, u in (*first.decisions, *rest.decisions)
               if b.kind == "user"]
    assert decided == [(True, "typed"), (False, "architect_edit")]


_CLAUDE_REVIEW = """
      You are an expert code reviewer. Follow these steps:

      1. If no PR number is provided in the args, run `gh pr list` to show open PRs
      2. If a PR number is provided, run `gh pr view <number>` to get PR details
      3. Run `gh pr diff <number>` to get the diff
      4. Analyze the changes and provide a thorough code review that includes:
         - Overview of what the PR does
         - Analysis of code quality and style
         - Specific suggestions for improvements
         - Any potential issues or risks

      Keep your review concise but thorough. Focus on:
      - Code correctness
      - Following project conventions
      - Performance implications
      - Test coverage
      - Security considerations

      Format your review with clear sections and bullet points.

      PR number: {}
    """


def test_claude_review_expansion_counts_only_the_persons_pr_words(tmp_path: Path) -> None:
    transcript = ClaudeCodeTranscript(tmp_path / "s.jsonl")
    transcript.prompt_command("review", _CLAUDE_REVIEW.format("PR 385"))
    transcript.append(Reply("Reviewing."))
    transcript.prompt_command("review", _CLAUDE_REVIEW.format(""))
    units = [classify_claude_line(line) for line in transcript.path.read_bytes().splitlines()]
    assert [(u.human, u.reason, u.text) for u in units if u.reason != "not_user"] == [
        (False, "command", None), (True, "typed", "PR 385"),
        (False, "command", None), (False, "tool_prompt", None)]


@pytest.mark.parametrize(("command", "expansion"), [
    ("security-review", "You are a senior security engineer conducting a focused security review"
     " of the changes on this branch.\n\nGIT STATUS:\n\n```\nOn branch main\n```"),
    ("pr-comments", "You are an AI assistant integrated into a git-based version control"
     " system. Your task is to fetch and display comments from a GitHub pull request.\n\n"
     "Follow these steps:\n\n1. Use `gh pr view --json number,headRepository` to get the PR"
     " number and repository info\n2. Use `gh api` to get the comments"),
    ("statusline", 'Create a Task with subagent_type "statusline-setup" and the prompt'
     ' "Configure my statusLine from my shell PS1 configuration"'),
])
def test_claude_older_prompt_commands_are_claude_codes_prompts(
        tmp_path: Path, command: str, expansion: str) -> None:
    """Adversary (issue 32): builds that wrote /init's expansion as a plain user row wrote
    /security-review's, /pr-comments' and /statusline's so too."""
    transcript = ClaudeCodeTranscript(tmp_path / "s.jsonl", version="2.0.76", entrypoint=None)
    transcript.append(Typed("hello"), Reply("Hi."))
    transcript.prompt_command(command, expansion, meta=False)
    units = [classify_claude_line(line) for line in transcript.path.read_bytes().splitlines()]
    assert [u.text for u in units if u.human] == ["hello"]
    assert [u.reason for u in units][2:4] == ["command", "tool_prompt"]


def test_claude_statusline_with_the_persons_words_counts_them(tmp_path: Path) -> None:
    transcript = ClaudeCodeTranscript(tmp_path / "s.jsonl", version="2.0.76", entrypoint=None)
    transcript.prompt_command("statusline", 'Create a Task with subagent_type'
                              ' "statusline-setup" and the prompt "show the git branch"')
    units = [classify_claude_line(line) for line in transcript.path.read_bytes().splitlines()]
    assert [(u.human, u.text) for u in units if u.human] == [(True, "show the git branch")]


def test_aider_architect_edit_after_replies_that_ran_together(tmp_path: Path) -> None:
    """Two replies with no prompt between run together as one run of reply blocks; the
    editor's input repeats only the newest."""
    history = AiderChatHistory(tmp_path / ".aider.chat.history.md")
    history.append(Typed("plan the flag"), Reply("Thinking.\n\nStill thinking."))
    history.architect_edit(_PLAN)
    assert [(h, r) for _, h, r in _aider(history.path)] == [
        (True, "typed"), (False, "architect_edit")]
