"""Count what the architecture issue measures, from the code's own imports.

Prints, for the packages ``actors`` and ``persistence`` of the tree it runs in:

* private imports across packages: an import of a module with a ``_`` part
  from a module of another package (top-level, and also between the
  sub-packages of ``actors``);
* import circles: strongly connected groups of more than one module;
* deferred imports: ``import`` statements inside functions (not under
  ``TYPE_CHECKING``), split into those of optional dependencies and the rest;
* modules that name an upstream source: modules outside the source modules
  and the registry whose code (not comments or docstrings) says
  ``claude``/``codex``/``opencode``/``pi`` as a word;
* the largest modules by line count.

Usage: ``python scripts/arch_report.py [--root DIR]`` (``DIR`` defaults to the
repository this script lives in). Runs on the calling thread; reads files only.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("actors", "persistence")
OPTIONAL = ("psycopg", "psycopg_pool", "mcp")
"""The optional dependencies (extras in ``pyproject.toml``)."""
KNOWN_TOOLS = ("claude", "codex", "opencode", "pi", "gemini", "qwen", "crush", "aider")
"""Tool names before the registry existed (older trees), joined by the registry's names."""


def source_names() -> tuple[str, ...]:
    """The registered sources' names (when the tree has a registry) and :data:`KNOWN_TOOLS`."""
    try:
        from actors.upstream.sources import source_names as registered
    except ImportError:
        return KNOWN_TOOLS
    return tuple(sorted(set(KNOWN_TOOLS) | set(registered())))


def source_word(names: tuple[str, ...]) -> re.Pattern[str]:
    """A source's name as a word in code (``opencode``, ``OPENCODE``, ``claude_node``)."""
    return re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b", re.IGNORECASE)


def source_module(names: tuple[str, ...]) -> re.Pattern[str]:
    """A part of a source's own module's name: its folder (``actors.upstream.claude``,
    ``actors.agents.tools.claude_code``) or a module named after it (``claude_node``)."""
    return re.compile(r"^_?(" + "|".join(map(re.escape, names)) + r")(_[a-z_]*)?$")


SOURCE_WORD = source_word(KNOWN_TOOLS)
SOURCE_MODULE = source_module(KNOWN_TOOLS)
REGISTRY = "actors.upstream.sources"
"""The registry: the one generic module that lists the sources (reported apart)."""


def modules(root: Path) -> dict[str, Path]:
    """Every module of :data:`PACKAGES` under ``root``: dotted name -> file."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(module: str, path: Path, known: set[str]) -> Iterator[tuple[str, bool, int]]:
    """Yield ``(imported module, deferred, line)`` for each import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"

    def walk(node: ast.AST, deferred: bool) -> Iterator[tuple[str, bool, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                continue
            inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, deferred, child.lineno
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(module, child, is_package)
                for alias in child.names:
                    full = f"{target}.{alias.name}"
                    yield (full if full in known else target), deferred, child.lineno
            yield from walk(child, inner)

    yield from walk(tree, False)


def _owner(module: str, packages: set[str], depth: int) -> str:
    """The package at ``depth`` (1: top level, 2: a sub-package of it) that holds ``module``."""
    parts = module.split(".")
    if depth == 2 and len(parts) >= 2 and ".".join(parts[:2]) in packages:
        return ".".join(parts[:2])
    return parts[0]


def _private_across(importer: str, imported: str, packages: set[str], depth: int) -> bool:
    """Whether ``imported`` is private to a package other than ``importer``'s."""
    owner = _owner(imported, packages, depth)
    if _owner(importer, packages, depth) == owner:
        return False
    tail = imported.split(".")[len(owner.split(".")) :]
    return any(p.startswith("_") and not p.startswith("__") for p in tail)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start, targets in graph.items():
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(targets)))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def code_names_a_source(path: Path, word: re.Pattern[str] = SOURCE_WORD) -> bool:
    """Whether the code of ``path`` (names and strings, not comments/docstrings) names a source."""
    source = path.read_text(encoding="utf-8")
    docstrings: set[int] = set()  # docstrings, and the bare strings documenting a constant
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            docstrings.add(node.lineno)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            continue
        if token.type == tokenize.STRING and token.start[0] in docstrings:
            continue
        if token.type in (tokenize.NAME, tokenize.STRING) and word.search(
            token.string.replace("_", " ")
        ):
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    """Print the report; returns the exit status (0)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args(argv)
    mods = modules(args.root)
    known = set(mods)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    packages = {m for m, p in mods.items() if p.name == "__init__.py"}
    private_top: set[tuple[str, str]] = set()
    private_sub: set[tuple[str, str]] = set()
    deferred_optional = deferred_other = 0
    deferred_where: list[str] = []
    for module, path in mods.items():
        for imported, deferred, line in imports(module, path, known):
            if deferred:
                if imported.split(".")[0] in OPTIONAL:
                    deferred_optional += 1
                else:
                    deferred_other += 1
                    deferred_where.append(f"{module}:{line} {imported}")
            if imported not in known:
                continue
            graph[module].add(imported)
            if _private_across(module, imported, packages, 1):
                private_top.add((module, imported))
            elif _private_across(module, imported, packages, 2):
                private_sub.add((module, imported))
    groups = circles(graph)
    names = source_names()
    word, module_pattern = source_word(names), source_module(names)
    naming = [
        m
        for m, p in mods.items()
        if not any(module_pattern.search(part) for part in m.split(".")[2:])
        and m not in (REGISTRY, "actors.agents.tools")
        and code_names_a_source(p, word)
    ]
    sizes = sorted(
        ((len(p.read_text(encoding="utf-8").splitlines()), m) for m, p in mods.items()),
        reverse=True,
    )
    out = sys.stdout
    out.write(f"modules: {len(mods)}\n")
    out.write(f"private imports across top-level packages: {len(private_top)}\n")
    for a, b in sorted(private_top):
        out.write(f"  {a} -> {b}\n")
    out.write(f"private imports across sub-packages of actors: {len(private_sub)}\n")
    for a, b in sorted(private_sub):
        out.write(f"  {a} -> {b}\n")
    out.write(f"import circles: {len(groups)}\n")
    for group in groups:
        out.write(f"  {' <-> '.join(group)}\n")
    out.write(
        f"deferred imports: {deferred_optional} of optional dependencies, "
        f"{deferred_other} others\n"
    )
    for where in deferred_where:
        out.write(f"  {where}\n")
    out.write(f"modules outside the source modules and the registry ({REGISTRY}) that name "
              f"a source: {len(naming)}\n")
    for m in naming:
        out.write(f"  {m}\n")
    out.write("largest modules (lines):\n")
    for lines, m in sizes[:8]:
        out.write(f"  {lines:5d} {m}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
