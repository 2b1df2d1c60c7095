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

from actors.testing import Reply, Typed
from actors.upstream.crush.classify import poll_crush
from actors.upstream.crush.kit import CrushTranscript
from actors.upstream.crush.prompts import CRUSH_PROMPTS
from actors.upstream.fixed_prompts import FILL, FixedPrompt, FixedPrompts


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
