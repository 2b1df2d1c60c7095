"""The prompts Crush sends by itself when a person clicks (read from Crush's source).

"Initialize Project" (the onboarding screen's "Yes" on a new project,
``internal/ui/model/onboarding.go`` ``initializeProject``, and the commands
dialog's entry ``init``, ``internal/ui/dialog/commands.go``) sends the
initialize template, rendered with the configured file name
(``options.initialize_as``, default ``AGENTS.md``; ``CRUSH.md`` before
v0.18.0), as an ordinary user message (``sendMessageMsg{Content:
initPrompt}``). The person clicked; the words are Crush's: ``tool_prompt``.

Every distinct text of the template in charmbracelet/crush's tags, with the
tags that ship it (``{FILL}`` is the rendered ``{{.Config.Options.InitializeAs}}``).
The pinned 0.96.1 could not be read (docs/upstream-crush.md); ``main`` at
37f36e9 (after v0.90.0) ships the last one. Data only; no I/O.
"""

from __future__ import annotations

from typing import Final

from actors.upstream.fixed_prompts import FixedPrompt, FixedPrompts

__all__ = ["CRUSH_PROMPTS"]

CRUSH_PROMPTS: Final = FixedPrompts((
    FixedPrompt(
        action="Initialize Project",
        origin="internal/llm/prompt/init.md@v0.1.0..v0.6.2",
        text="\n".join((
            "`Please analyze this codebase and create a **CRUSH.md** file containing:",
            "",
            "- Build/lint/test commands - especially for running a single test",
            "- Code style guidelines including imports, formatting, types, naming"
            " conventions, error handling, etc.",
            "",
            "The file you create will be given to agentic coding agents (such as"
            " yourself) that operate in this repository. Make it about 20-30 lines"
            " long.",
            "If there's already a **CRUSH.md**, improve it.",
            "",
            "If there are Cursor rules (in `.cursor/rules/` or `.cursorrules`) or"
            " Copilot rules (in `.github/copilot-instructions.md`), make sure to"
            " include them.",
            "Add the `.crush` directory to the `.gitignore` file if it's not already"
            " there.",
            "",
        ))),
    FixedPrompt(
        action="Initialize Project",
        origin="internal/llm/prompt/init.md@v0.6.3..v0.12.3",
        text="\n".join((
            "`Please analyze this codebase and create a **CRUSH.md** file containing:",
            "",
            "- Build/lint/test commands - especially for running a single test",
            "- Code style guidelines including imports, formatting, types, naming"
            " conventions, error handling, etc.",
            "",
            "The file you create will be given to agentic coding agents (such as"
            " yourself) that operate in this repository. Make it about 20-30 lines"
            " long.",
            "If there's already a **CRUSH.md**, improve it.",
            "",
            "If there are Cursor rules (in `.cursor/rules/` or `.cursorrules`) or"
            " Copilot rules (in `.github/copilot-instructions.md`), make sure to"
            " include them.",
            "",
        ))),
    FixedPrompt(
        action="Initialize Project",
        origin="internal/agent/templates/initialize.md@v0.13.0-beta.1..v0.13.0-beta.2",
        text="\n".join((
            "Please analyze this codebase and create a **CRUSH.md** file containing:",
            "",
            "- Build/lint/test commands - especially for running a single test",
            "- Code style guidelines including imports, formatting, types, naming"
            " conventions, error handling, etc.",
            "",
            "The file you create will be given to agentic coding agents (such as"
            " yourself) that operate in this repository. Make it about 20-30 lines"
            " long.",
            "If there's already a **CRUSH.md**, improve it.",
            "",
            "If there are Cursor rules (in `.cursor/rules/` or `.cursorrules`) or"
            " Copilot rules (in `.github/copilot-instructions.md`), make sure to"
            " include them.",
            "",
        ))),
    FixedPrompt(
        action="Initialize Project",
        origin="internal/agent/templates/initialize.md@v0.13.0..v0.17.0",
        text="\n".join((
            "Analyze this codebase and create/update **CRUSH.md** to help future agents"
            " work effectively in this repository.",
            "",
            "**First**: Check if directory is empty or contains only config files. If"
            " so, stop and say \"Directory appears empty or only contains config. Add"
            " source code first, then run this command to generate CRUSH.md.\"",
            "",
            "**Goal**: Document what an agent needs to know to work in this codebase -"
            " commands, patterns, conventions, gotchas.",
            "",
            "**Discovery process**:",
            "",
            "1. Check directory contents with `ls`",
            "2. Look for existing rule files (`.cursor/rules/*.md`, `.cursorrules`,"
            " `.github/copilot-instructions.md`, `claude.md`, `agents.md`) - only read"
            " if they exist",
            "3. Identify project type from config files and directory structure",
            "4. Find build/test/lint commands from config files, scripts, Makefiles, or"
            " CI configs",
            "5. Read representative source files to understand code patterns",
            "6. If CRUSH.md exists, read and improve it",
            "",
            "**Content to include**:",
            "",
            "- Essential commands (build, test, run, deploy, etc.) - whatever is"
            " relevant for this project",
            "- Code organization and structure",
            "- Naming conventions and style patterns",
            "- Testing approach and patterns",
            "- Important gotchas or non-obvious patterns",
            "- Any project-specific context from existing rule files",
            "",
            "**Format**: Clear markdown sections. Use your judgment on structure based"
            " on what you find. Aim for completeness over brevity - include everything"
            " an agent would need to know.",
            "",
            "**Critical**: Only document what you actually observe. Never invent"
            " commands, patterns, or conventions. If you can't find something, don't"
            " include it.",
            "",
        ))),
    FixedPrompt(
        action="Initialize Project",
        origin="internal/agent/templates/initialize.md.tpl@v0.18.0..v0.53.0",
        text="\n".join((
            "Analyze this codebase and create/update **{FILL}** to help future agents"
            " work effectively in this repository.",
            "",
            "**First**: Check if directory is empty or contains only config files. If"
            " so, stop and say \"Directory appears empty or only contains config. Add"
            " source code first, then run this command to generate {FILL}.\"",
            "",
            "**Goal**: Document what an agent needs to know to work in this codebase -"
            " commands, patterns, conventions, gotchas.",
            "",
            "**Discovery process**:",
            "",
            "1. Check directory contents with `ls`",
            "2. Look for existing rule files (`.cursor/rules/*.md`, `.cursorrules`,"
            " `.github/copilot-instructions.md`, `claude.md`, `agents.md`) - only read"
            " if they exist",
            "3. Identify project type from config files and directory structure",
            "4. Find build/test/lint commands from config files, scripts, Makefiles, or"
            " CI configs",
            "5. Read representative source files to understand code patterns",
            "6. If {FILL} exists, read and improve it",
            "",
            "**Content to include**:",
            "",
            "- Essential commands (build, test, run, deploy, etc.) - whatever is"
            " relevant for this project",
            "- Code organization and structure",
            "- Naming conventions and style patterns",
            "- Testing approach and patterns",
            "- Important gotchas or non-obvious patterns",
            "- Any project-specific context from existing rule files",
            "",
            "**Format**: Clear markdown sections. Use your judgment on structure based"
            " on what you find. Aim for completeness over brevity - include everything"
            " an agent would need to know.",
            "",
            "**Critical**: Only document what you actually observe. Never invent"
            " commands, patterns, or conventions. If you can't find something, don't"
            " include it.",
            "",
        ))),
    FixedPrompt(
        action="Initialize Project",
        origin="internal/agent/templates/initialize.md.tpl@v0.54.0..v0.90.0, main 37f36e9",
        text="\n".join((
            "Analyze this codebase and create/update **{FILL}** to help future agents"
            " work effectively in this repository.",
            "",
            "**First**: Check if directory is empty or contains only config files. If"
            " so, stop and say \"Directory appears empty or only contains config. Add"
            " source code first, then run this command to generate {FILL}.\"",
            "",
            "**Goal**: Document what an agent needs to know to work in this codebase -"
            " commands, patterns, conventions, gotchas, overall architecture, how"
            " components fit together",
            "",
            "**Discovery process**:",
            "",
            "1. Check directory contents with `ls`",
            "2. Look for existing rule files (`.cursor/rules/*.md`, `.cursorrules`,"
            " `.github/copilot-instructions.md`, `claude.md`, `agents.md`) - only read"
            " if they exist",
            "3. Identify project type from config files and directory structure",
            "4. Find build/test/lint commands from config files, scripts, Makefiles, or"
            " CI configs",
            "5. Read representative source files to understand code patterns,"
            " architecture, control/data flow",
            "6. If {FILL} exists, read and improve it",
            "",
            "**Content to include**:",
            "",
            "- Essential commands (build, test, run, deploy, etc.) - whatever is"
            " relevant for this project",
            "- Code organization and structure, application architecture and"
            " control/data flow",
            "- Naming conventions and style patterns",
            "- Testing approach and patterns",
            "- Important gotchas or non-obvious patterns",
            "- Any project-specific context from existing rule files",
            "",
            "**Note:** LLM agents learn and adapt to their context as they obtain it,"
            " so mentioning obvious details they would immediately pick up from reading"
            " a file or two is actively detrimental. Keep the principles of progressive"
            " disclosure in mind and focus primarily on non-obvious knowledge that"
            " saves the agent from trial-and-error discovery: gotchas, implicit"
            " conventions, commands with surprising flags, and context that isn't"
            " self-evident from the code in a single file.",
            "",
            "**Format**: Clear markdown sections. Use your judgment on structure based"
            " on what you find. Aim for completeness over brevity - include everything"
            " an agent would need to know.",
            "",
            "**Critical**: Only document what you actually observe. Never invent"
            " commands, patterns, or conventions. If you can't find something, don't"
            " include it.",
            "",
        ))),
))
