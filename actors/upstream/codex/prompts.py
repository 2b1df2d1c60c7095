"""The prompts Codex sends for the person (read from Codex's source and its 0.169.0 binary).

* ``/init``: the TUI submits the fixed text of
  ``codex-rs/tui/prompt_for_init_command.md`` (``include_str!``) as an
  ordinary user message (``submit_user_message``): it is written exactly like
  a typed prompt. The person typed ``/init``; the words are Codex's.
* ``/compact``: the compaction prompt (``codex-rs/core/templates/compact/prompt.md``),
  kept here in case a build writes it as a user message.

The ``/review`` presets and the plan popup's texts, which are decided with
reasons of their own (``review_request``, ``plan_implementation``), stay in
:mod:`actors.upstream.codex.classify`. Data only.
"""

from __future__ import annotations

from typing import Final

from actors.upstream.fixed_prompts import FixedPrompt, FixedPrompts

__all__ = ["CODEX_PROMPTS"]

CODEX_PROMPTS: Final = FixedPrompts((
    FixedPrompt(
        action="/init",
        origin="codex-rs/tui/prompt_for_init_command.md@0.169.0 (npm binary)",
        text="\n".join((
            "Generate a file named AGENTS.md that serves as a contributor guide for"
            " this repository.",
            "Before writing, check whether AGENTS.md already exists in the current"
            " working directory. If it does, do not overwrite or modify it.",
            "Your goal is to produce a clear, concise, and well-structured document"
            " with descriptive headings and actionable explanations for each section.",
            "Follow the outline below, but adapt as needed \u2014 add sections if relevant,"
            " and omit those that do not apply to this project.",
            "",
            "Document Requirements",
            "",
            "- Title the document \"Repository Guidelines\".",
            "- Use Markdown headings (#, ##, etc.) for structure.",
            "- Keep the document concise. 200-400 words is optimal.",
            "- Keep explanations short, direct, and specific to this repository.",
            "- Provide examples where helpful (commands, directory paths, naming"
            " patterns).",
            "- Maintain a professional, instructional tone.",
            "",
            "Recommended Sections",
            "",
            "Project Structure & Module Organization",
            "",
            "- Outline the project structure, including where the source code, tests,"
            " and assets are located.",
            "",
            "Build, Test, and Development Commands",
            "",
            "- List key commands for building, testing, and running locally (e.g., npm"
            " test, make build).",
            "- Briefly explain what each command does.",
            "",
            "Coding Style & Naming Conventions",
            "",
            "- Specify indentation rules, language-specific style preferences, and"
            " naming patterns.",
            "- Include any formatting or linting tools used.",
            "",
            "Testing Guidelines",
            "",
            "- Identify testing frameworks and coverage requirements.",
            "- State test naming conventions and how to run tests.",
            "",
            "Commit & Pull Request Guidelines",
            "",
            "- Summarize commit message conventions found in the project\u2019s Git history.",
            "- Outline pull request requirements (descriptions, linked issues,"
            " screenshots, etc.).",
            "",
            "(Optional) Add other sections if relevant, such as Security &"
            " Configuration Tips, Architecture Overview, or Agent-Specific"
            " Instructions.",
            "",
        ))),
    FixedPrompt(
        action="/init",
        origin="codex-rs/tui/prompt_for_init_command.md@earlier builds",
        text="\n".join((
            "Generate a file named AGENTS.md that serves as a contributor guide for"
            " this repository.",
            "Your goal is to produce a clear, concise, and well-structured document"
            " with descriptive headings and actionable explanations for each section.",
            "Follow the outline below, but adapt as needed \u2014 add sections if relevant,"
            " and omit those that do not apply to this project.",
            "",
            "Document Requirements",
            "",
            "- Title the document \"Repository Guidelines\".",
            "- Use Markdown headings (#, ##, etc.) for structure.",
            "- Keep the document concise. 200-400 words is optimal.",
            "- Keep explanations short, direct, and specific to this repository.",
            "- Provide examples where helpful (commands, directory paths, naming"
            " patterns).",
            "- Maintain a professional, instructional tone.",
            "",
            "Recommended Sections",
            "",
            "Project Structure & Module Organization",
            "",
            "- Outline the project structure, including where the source code, tests,"
            " and assets are located.",
            "",
            "Build, Test, and Development Commands",
            "",
            "- List key commands for building, testing, and running locally (e.g., npm"
            " test, make build).",
            "- Briefly explain what each command does.",
            "",
            "Coding Style & Naming Conventions",
            "",
            "- Specify indentation rules, language-specific style preferences, and"
            " naming patterns.",
            "- Include any formatting or linting tools used.",
            "",
            "Testing Guidelines",
            "",
            "- Identify testing frameworks and coverage requirements.",
            "- State test naming conventions and how to run tests.",
            "",
            "Commit & Pull Request Guidelines",
            "",
            "- Summarize commit message conventions found in the project\u2019s Git history.",
            "- Outline pull request requirements (descriptions, linked issues,"
            " screenshots, etc.).",
            "",
            "(Optional) Add other sections if relevant, such as Security &"
            " Configuration Tips, Architecture Overview, or Agent-Specific"
            " Instructions.",
            "",
        ))),
    FixedPrompt(
        action="/init",
        origin="codex-rs/tui/prompt_for_init_command.md@71163530",
        text="\n".join((
            "Generate a file named AGENTS.md that serves as a contributor guide for"
            " this repository.",
            "Your goal is to produce a clear, concise, and well-structured document"
            " with descriptive headings and actionable explanations for each section.",
            "Follow the outline below, but adapt as needed \u2014 add sections if relevant,"
            " and omit those that do not apply to this project.",
            "",
            "Document Requirements",
            "",
            "- Title the document \"Repository Guidelines\".",
            "- Use Markdown headings (#, ##, etc.) for structure.",
            "- Keep the document concise. 200-400 words is optimal.",
            "- Keep explanations short, direct, and specific to this repository.",
            "- Provide examples where helpful (commands, directory paths, naming"
            " patterns).",
            "- Maintain a professional, instructional tone.",
            "",
            "Recommended Sections",
            "",
            "Project Structure & Module Organization",
            "",
            "- Outline the project structure, including where the source code, tests,"
            " and assets are located.",
            "",
            "Build, Test, and Development Commands",
            "<!-- tui/prompt_for_init_command.md -->",
            "",
            "- List key commands for building, testing, and running locally (e.g., npm"
            " test, make build).",
            "- Briefly explain what each command does.",
            "",
            "Coding Style & Naming Conventions",
            "",
            "- Specify indentation rules, language-specific style preferences, and"
            " naming patterns.",
            "- Include any formatting or linting tools used.",
            "",
            "Testing Guidelines",
            "",
            "- Identify testing frameworks and coverage requirements.",
            "- State test naming conventions and how to run tests.",
            "",
            "Commit & Pull Request Guidelines",
            "",
            "- Summarize commit message conventions found in the project\u2019s Git history.",
            "- Outline pull request requirements (descriptions, linked issues,"
            " screenshots, etc.).",
            "",
            "(Optional) Add other sections if relevant, such as Security &"
            " Configuration Tips, Architecture Overview, or Agent-Specific"
            " Instructions.",
            "",
        ))),
    FixedPrompt(
        action="/compact",
        origin="codex-rs/core/templates/compact/prompt.md@0.169.0 (npm binary)",
        text="\n".join((
            "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff"
            " summary for another LLM that will resume the task.",
            "",
            "Include:",
            "- Current progress and key decisions made",
            "- Important context, constraints, or user preferences",
            "- What remains to be done (clear next steps)",
            "- Any critical data, examples, or references needed to continue",
            "",
            "Be concise, structured, and focused on helping the next LLM seamlessly"
            " continue the work.",
        ))),
))
