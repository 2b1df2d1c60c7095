"""The prompts Claude Code sends for the person when they run ``/init`` and its other
built-in prompt commands (``/review``, ``/security-review``, ``/pr-comments``,
``/statusline``).

Claude Code's ``/init`` is a ``type: "prompt"`` command: it writes a
``<command-name>/init</command-name>`` row (``command``) and then the expanded
prompt as a user row. Current builds mark the expansion ``isMeta`` (``meta``);
older builds wrote it as a plain user row, exactly like a typed prompt. The
person typed ``/init``; the words are Claude Code's: ``tool_prompt``.

* 0.2.x: the whole text (``getPromptForCommand`` of the ``init`` command in
  ``cli.js``), compared exactly.
* 1.x to 2.1.328: the text is assembled when the command runs (2.1.328's
  binary holds it in pieces: a bullet about Codex and Gemini configs is added
  only when such files exist, and the usage notes changed across versions),
  so only its fixed opening, the first paragraph and the two "What to add"
  items, is compared exactly; what follows is :data:`REST`. Read from the
  2.1.328 binary (``@anthropic-ai/claude-code-linux-x64``).

* ``/review [PR]`` (1.x to 2.1.x, before it moved to the ``code-review``
  plugin): "You are an expert code reviewer. Follow these steps: …" ending
  ``PR number: ${args}``, as published transcripts show it written after the
  ``<command-name>/review`` row; two wordings (the Bash tool named, or ``run
  `gh …```). The PR the person named (:data:`ARGS`) is their words: with one
  the row counts as typed with those words as its text, without one it is
  ``tool_prompt``.
* ``/security-review`` (its fixed opening, in the 2.1.328 and 2.1.332 binaries),
  ``/pr-comments`` (its opening and first step) and ``/statusline`` (the whole
  prompt, its default words or the person's as :data:`ARGS`), written as plain user
  rows by the builds that wrote ``/init``'s that way (adversary, issue 32).

Data only.
"""

from __future__ import annotations

from typing import Final

from actors.upstream.fixed_prompts import FixedPrompt, FixedPrompts

__all__ = ["CLAUDE_PROMPTS"]

CLAUDE_PROMPTS: Final = FixedPrompts((
    FixedPrompt(
        action="/init",
        origin="the init command's getPromptForCommand@0.2.x (cli.js)",
        text="\n".join((
            "Please analyze this codebase and create a CLAUDE.md file containing:",
            "1. Build/lint/test commands - especially for running a single test",
            "2. Code style guidelines including imports, formatting, types, naming"
            " conventions, error handling, etc.",
            "",
            "The file you create will be given to agentic coding agents (such as"
            " yourself) that operate in this repository. Make it about 20 lines long.",
            "If there's already a CLAUDE.md, improve it.",
            "If there are Cursor rules (in .cursor/rules/ or .cursorrules) or Copilot"
            " rules (in .github/copilot-instructions.md), make sure to include them.",
        ))),
    FixedPrompt(
        action="/init",
        origin="the init command's prompt@1.x..2.1.328 (the fixed opening; npm binary)",
        text="\n".join((
            "Please analyze this codebase and create a CLAUDE.md file, which will be"
            " given to future instances of Claude Code to operate in this repository.",
            "",
            "What to add:",
            "1. Commands that will be commonly used, such as how to build, lint, and"
            " run tests. Include the necessary commands to develop in this codebase,"
            " such as how to run a single test.",
            "2. High-level code architecture and structure so that future instances can"
            " be productive more quickly. Focus on the \"big picture\" architecture that"
            " requires reading multiple files to understand.",
            "{REST}",
        ))),
    FixedPrompt(
        action="/review",
        origin="the review command's getPromptForCommand@1.0.x (cli.js; Bash tool named)",
        text="\n".join((
            "",
            "You are an expert code reviewer. Follow these steps:",
            "",
            "1. If no PR number is provided in the args, use Bash(\"gh pr list\") to show"
            " open PRs",
            "2. If a PR number is provided, use Bash(\"gh pr view <number>\") to get PR"
            " details",
            "3. Use Bash(\"gh pr diff <number>\") to get the diff",
            "4. Analyze the changes and provide a thorough code review that includes:",
            "- Overview of what the PR does",
            "- Analysis of code quality and style",
            "- Specific suggestions for improvements",
            "- Any potential issues or risks",
            "",
            "Keep your review concise but thorough. Focus on:",
            "- Code correctness",
            "- Following project conventions",
            "- Performance implications",
            "- Test coverage",
            "- Security considerations",
            "",
            "Format your review with clear sections and bullet points.",
            "",
            "PR number: {ARGS}",
            "",
        ))),
    FixedPrompt(
        action="/review",
        origin="the review command's prompt@1.0.x..2.1.x (cli.js; before the code-review plugin)",
        text="\n".join((
            "",
            "You are an expert code reviewer. Follow these steps:",
            "",
            "1. If no PR number is provided in the args, run `gh pr list` to show open"
            " PRs",
            "2. If a PR number is provided, run `gh pr view <number>` to get PR details",
            "3. Run `gh pr diff <number>` to get the diff",
            "4. Analyze the changes and provide a thorough code review that includes:",
            "- Overview of what the PR does",
            "- Analysis of code quality and style",
            "- Specific suggestions for improvements",
            "- Any potential issues or risks",
            "",
            "Keep your review concise but thorough. Focus on:",
            "- Code correctness",
            "- Following project conventions",
            "- Performance implications",
            "- Test coverage",
            "- Security considerations",
            "",
            "Format your review with clear sections and bullet points.",
            "",
            "PR number: {ARGS}",
            "",
        ))),
    FixedPrompt(
        action="/security-review",
        origin="the security-review command's prompt@2.1.328..2.1.332 (the fixed opening; npm"
               " binary)",
        text="\n".join((
            "You are a senior security engineer conducting a focused security review of the"
            " changes on this branch.",
            "{REST}",
        ))),
    FixedPrompt(
        action="/pr-comments",
        origin="the pr-comments command's prompt (commands/pr_comments/index.ts, before it"
               " moved to a plugin; as published transcripts show it)",
        text="\n".join((
            "You are an AI assistant integrated into a git-based version control system."
            " Your task is to fetch and display comments from a GitHub pull request.",
            "",
            "Follow these steps:",
            "",
            "1. Use `gh pr view --json number,headRepository` to get the PR number and"
            " repository info",
            "{REST}",
        ))),
    *(FixedPrompt(
        action="/statusline",
        origin=f"the statusline command's prompt ({tool} tool; published transcripts)",
        text=f'Create a {tool} with subagent_type "statusline-setup" and the prompt'
             f' "{words}"')
      for tool in ("Task", "Agent")
      for words in ("Configure my statusLine from my shell PS1 configuration", "{ARGS}")),
))
