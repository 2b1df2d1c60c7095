"""Issue 34 item 17: the README is a landing page and the rest is a MkDocs site built from docs/.

Cheap, deterministic checks of the files alone (no mkdocs needed; CI also runs
``mkdocs build --strict``, which renders the pages and the API reference):

* README.md stays a landing page (at most 320 lines) and keeps the
  "Running the tests" section, whose commands are the ones .ci/run runs;
* every relative link of README.md and docs/**/*.md names a file that exists,
  and its ``#anchor`` a heading of that file (GitHub's anchors in README.md,
  MkDocs' in docs/);
* every page under docs/ is in mkdocs.yml's nav, and every nav entry exists;
* every ``::: name`` of the API reference names an importable object;
* every section of the old 1,200-line README is a heading of some docs page.
"""

from __future__ import annotations

import importlib
import re
import shlex
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MKDOCS_YML = ROOT / "mkdocs.yml"
CI_RUN = ROOT / ".ci" / "run"

MAX_README_LINES = 320

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def _pages() -> list[Path]:
    """Every Markdown page of the site (docs/hooks holds the build's own code)."""
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.relative_to(DOCS).parts)


def _prose(text: str) -> list[str]:
    """The lines of ``text`` outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def _heading_texts(path: Path) -> list[str]:
    """The plain text of each heading of ``path`` (code spans unwrapped, links to text)."""
    texts = []
    for line in _prose(path.read_text()):
        match = _HEADING.match(line)
        if match:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(2))
            texts.append(text.replace("`", ""))
    return texts


def _mkdocs_slug(text: str) -> str:
    """Python-Markdown's ``toc`` slug (MkDocs' default), as ``markdown.extensions.toc.slugify``."""
    value = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def _github_slug(text: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, each space a hyphen."""
    value = re.sub(r"[^\w\- ]", "", text.lower())
    return value.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    """The anchors of ``path``'s headings: GitHub's for README.md, MkDocs' for docs pages."""
    slug = _github_slug if path == README else _mkdocs_slug
    seen: dict[str, int] = {}
    anchors = set()
    for text in _heading_texts(path):
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchors.add(base if count == 0 else f"{base}{'-' if path == README else '_'}{count}")
    return anchors


def _links(path: Path) -> list[str]:
    """The link targets of ``path``'s prose (code blocks and code spans left out)."""
    targets = []
    for line in _prose(path.read_text()):
        targets.extend(_LINK.findall(_CODE_SPAN.sub("", line)))
    return targets


def _broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """``path``'s relative links whose file or anchor does not exist, each with why."""
    broken = []
    for target in _links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.is_file():
            broken.append(f"{path.relative_to(root)}: {target} (no file {file_part})")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{path.relative_to(root)}: {target} (no heading #{anchor})")
    return broken


def _nav_pages() -> list[str]:
    """The page paths (relative to docs/) listed under ``nav:`` in mkdocs.yml."""
    text = MKDOCS_YML.read_text()
    nav = text[text.index("\nnav:\n"):]
    return re.findall(r"^\s*-\s+(?:[^\n:]+:\s+)?([\w./-]+\.md)\s*$", nav, flags=re.MULTILINE)


def _section(path: Path, title: str) -> str:
    """The text of the ``## title`` section of ``path`` (up to the next ``## ``)."""
    text = path.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _commands(block_text: str) -> list[str]:
    """The commands of the ``sh`` blocks in ``block_text``: comments dropped, ``&&`` split."""
    commands: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", block_text, flags=re.DOTALL):
        for line in block.splitlines():
            command = line.split(" #", 1)[0].strip()
            commands.extend(part.strip() for part in command.split("&&") if part.strip())
    return commands


def _normal(command: str) -> tuple[str, ...]:
    """``command``'s words without the quiet flags (.ci/run adds ``-q``/``--quiet``)."""
    return tuple(w for w in shlex.split(command) if w not in ("-q", "--quiet"))


def _ci_commands() -> list[tuple[str, ...]]:
    """The command lines of .ci/run, normalized (env assignments dropped)."""
    found = []
    for raw in CI_RUN.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = [w for w in _normal(line) if not re.match(r"^[A-Z_][A-Z0-9_]*=", w)]
        found.append(tuple(words))
    return found


def test_the_readme_is_a_landing_page() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines; keep it a landing page (at most "
        f"{MAX_README_LINES}) and move details to a page under docs/")
    headings = _heading_texts(README)
    for needed in ("Install", "What you will see", "Running the tests", "Documentation"):
        assert needed in headings, f"README.md lost its {needed!r} section"


def test_the_readme_says_print_mode_sessions_never_count_where_it_installs() -> None:
    """A user testing with ``claude -p`` must learn it is silent by design, beside the install."""
    install = _section(README, "Install")
    assert "`claude -p`" in install
    assert "`codex exec`" in install
    assert "by design" in install


def test_every_relative_link_points_to_an_existing_file_and_anchor() -> None:
    broken = [b for page in [README, *_pages()] for b in _broken_links(page)]
    assert broken == []


def test_the_link_check_catches_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    """The checker itself can fail (a checker that finds nothing would pass any tree)."""
    page = DOCS / "limits.md"
    assert _broken_links(page) == []
    bad = tmp_path / "bad.md"
    bad.write_text("# Bad\n\n[a](nowhere.md) [b](#no-such-heading) [c](#bad)\n"
                   "```\n[not a link](in-code.md)\n```\n")
    assert _broken_links(bad, root=tmp_path) == [
        "bad.md: nowhere.md (no file nowhere.md)",
        "bad.md: #no-such-heading (no heading #no-such-heading)"]


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    nav = _nav_pages()
    pages = [p.relative_to(DOCS).as_posix() for p in _pages()]
    assert sorted(set(pages) - set(nav)) == [], "pages under docs/ missing from mkdocs.yml's nav"
    assert sorted(set(nav) - set(pages)) == [], "mkdocs.yml's nav names pages that do not exist"
    assert len(nav) == len(set(nav)), "a page is in the nav twice"


def test_the_readme_test_commands_are_what_ci_runs() -> None:
    ci = _ci_commands()
    readme_tests = _commands(_section(README, "Running the tests"))
    assert "python -m pytest" in readme_tests
    for command in readme_tests:
        assert _normal(command) in ci, f"README runs {command!r}, .ci/run does not"
    for command in _commands(_section(README, "Documentation")):
        if command.startswith("mkdocs serve"):
            continue  # the local preview; CI builds
        assert _normal(command) in ci, f"README runs {command!r}, .ci/run does not"


def test_ci_builds_the_docs_strictly_before_the_tests() -> None:
    ci = _ci_commands()
    build = ci.index(("mkdocs", "build", "--strict"))
    first_pytest = min(i for i, c in enumerate(ci) if c[:3] == ("python", "-m", "pytest"))
    assert build < first_pytest
    assert ("python", "-m", "pip", "install", "-e", ".[docs]") in ci[:build]


def test_every_api_reference_directive_names_an_importable_object() -> None:
    names = []
    for page in (DOCS / "reference").glob("*.md"):
        names += re.findall(r"^::: ([\w.]+)\s*$", page.read_text(), flags=re.MULTILINE)
    assert {"actors.Gateway", "actors.AsyncGateway", "actors.GatewayConfig", "actors.testing",
            "ssa_pytest_plugin"} <= set(names)
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:
            module_name, _, attr = name.rpartition(".")
            assert hasattr(importlib.import_module(module_name), attr), f"{name}: not found"


# Every ``##``/``###`` section of the README before issue 34 item 17 (1,197 lines).
_OLD_README_SECTIONS = [
    "Use it with your coding agents", "ssa watch in thirty seconds", "Running the tests",
    "For gateway builders", "Embedding", "asyncio gateways", "API at a glance",
    "Configuration", "Command line", "ssa watch --exec: hand notices to other programs",
    "Deployment", "Testing your gateway", "Upstream classification policy", "How it works",
    "Deliberate differences from OpenClaw's implementation", "Limits",
]


@pytest.mark.parametrize("title", _OLD_README_SECTIONS)
def test_every_old_readme_section_is_on_a_docs_page(title: str) -> None:
    headings = {h for page in _pages() for h in _heading_texts(page)}
    assert any(title in h for h in headings), f"no docs page has the section {title!r}"
