"""The prompts OpenCode sends for the person: the built-in ``/init`` command's.

``/init`` (the TUI's command list, ``opencode run --command init``, any front
end that runs the ``init`` command) runs ``Command`` ``init``: its template,
with ``$ARGUMENTS`` replaced by the words typed after the command and
``${path}`` by the worktree, is sent as the text part of an ordinary user
message (``SessionPrompt.command``). The template is OpenCode's
(``tool_prompt``); the arguments are the person's words (:data:`ARGS`).

* 1.18.33: read from the npm binary (``opencode-linux-x64/bin/opencode``, the
  ``Command`` service: ``s[l.INIT] = {name: "init", description: "guided
  AGENTS.md setup", template: b.replace("${path}", worktree)}``).
* earlier releases: the text published OpenCode session exports hold for
  ``/init`` ("Make it about 20 lines long" in some, "150" in others); the
  words after the worktree are not told apart (no :data:`ARGS`: the path may
  hold spaces), so such a message never counts.

``/review`` is a ``subtask`` command: its prompt goes to a child session
(``child_session``), not into the person's. Data only.
"""

from __future__ import annotations

from typing import Final

from actors.upstream.fixed_prompts import FixedPrompt, FixedPrompts

__all__ = ["OPENCODE_PROMPTS"]

OPENCODE_PROMPTS: Final = FixedPrompts((
    FixedPrompt(
        action="/init",
        origin="the init command's template@opencode-ai 1.18.33 (npm binary)",
        text="\n".join((
            "Create or update `AGENTS.md` for this repository.",
            "",
            "The goal is a compact instruction file that helps future OpenCode sessions"
            " avoid mistakes and ramp up quickly. Every line should answer: \"Would an"
            " agent likely miss this without help?\" If not, leave it out.",
            "",
            "User-provided focus or constraints (honor these):",
            "{ARGS}",
            "",
            "## How to investigate",
            "",
            "Read the highest-value sources first:",
            "- `README*`, root manifests, workspace config, lockfiles",
            "- build, test, lint, formatter, typecheck, and codegen config",
            "- CI workflows and pre-commit / task runner config",
            "- existing instruction files (`AGENTS.md`, `CLAUDE.md`, `.cursor/rules/`,"
            " `.cursorrules`, `.github/copilot-instructions.md`)",
            "- repo-local OpenCode config such as `opencode.json`",
            "",
            "If architecture is still unclear after reading config and docs, inspect a"
            " small number of representative code files to find the real entrypoints,"
            " package boundaries, and execution flow. Prefer reading the files that"
            " explain how the system is wired together over random leaf files.",
            "",
            "Prefer executable sources of truth over prose. If docs conflict with"
            " config or scripts, trust the executable source and only keep what you can"
            " verify.",
            "",
            "## What to extract",
            "",
            "Look for the highest-signal facts for an agent working in this repo:",
            "- exact developer commands, especially non-obvious ones",
            "- how to run a single test, a single package, or a focused verification"
            " step",
            "- required command order when it matters, such as `lint -> typecheck ->"
            " test`",
            "- monorepo or multi-package boundaries, ownership of major directories,"
            " and the real app/library entrypoints",
            "- framework or toolchain quirks: generated code, migrations, codegen,"
            " build artifacts, special env loading, dev servers, infra deploy flow",
            "- repo-specific style or workflow conventions that differ from defaults",
            "- testing quirks: fixtures, integration test prerequisites, snapshot"
            " workflows, required services, flaky or expensive suites",
            "- important constraints from existing instruction files worth preserving",
            "",
            "Good `AGENTS.md` content is usually hard-earned context that took reading"
            " multiple files to infer.",
            "",
            "## Questions",
            "",
            "Only ask the user questions if the repo cannot answer something important."
            " Use the `question` tool for one short batch at most.",
            "",
            "Good questions:",
            "- undocumented team conventions",
            "- branch / PR / release expectations",
            "- missing setup or test prerequisites that are known but not written down",
            "",
            "Do not ask about anything the repo already makes clear.",
            "",
            "## Writing rules",
            "",
            "Include only high-signal, repo-specific guidance such as:",
            "- exact commands and shortcuts the agent would otherwise guess wrong",
            "- architecture notes that are not obvious from filenames",
            "- conventions that differ from language or framework defaults",
            "- setup requirements, environment quirks, and operational gotchas",
            "- references to existing instruction sources that matter",
            "",
            "Exclude:",
            "- generic software advice",
            "- long tutorials or exhaustive file trees",
            "- obvious language conventions",
            "- speculative claims or anything you could not verify",
            "- content better stored in another file referenced via `opencode.json`"
            " `instructions`",
            "",
            "When in doubt, omit.",
            "",
            "Prefer short sections and bullets. If the repo is simple, keep the file"
            " simple. If the repo is large, summarize the few structural facts that"
            " actually change how an agent should work.",
            "",
            "If `AGENTS.md` already exists at `{REST}`, improve it in place rather than"
            " rewriting blindly. Preserve verified useful guidance, delete fluff or"
            " stale claims, and reconcile it with the current codebase.",
            "",
        ))),
    FixedPrompt(
        action="/init",
        origin="initialize.txt@earlier releases (seen in published sessions)",
        text="\n".join((
            "Please analyze this codebase and create an AGENTS.md file containing:",
            "1. Build/lint/test commands - especially for running a single test",
            "2. Code style guidelines including imports, formatting, types, naming"
            " conventions, error handling, etc.",
            "",
            "The file you create will be given to agentic coding agents (such as"
            " yourself) that operate in this repository. Make it about {FILL} lines"
            " long.",
            "If there are Cursor rules (in .cursor/rules/ or .cursorrules) or Copilot"
            " rules (in .github/copilot-instructions.md), make sure to include them.",
            "",
            "If there's already an AGENTS.md, improve it if it's located in {REST}",
        ))),
))
