"""Griffe extension for the API reference: the docstrings ``_doc_of`` gives at run time.

``actors.facade.gateway.Gateway`` writes each contract docstring once, beside
the collaborator method that implements it, and its public method takes it
with ``@_doc_of(SessionsApi.watch)`` when the class is defined. Griffe reads
the source without running it, so without this extension those methods would
have no docstring in the reference (and ``mkdocs build`` would leave them
out). After the package is loaded, each method decorated so gets a copy of
its source's docstring, parsed in its own place. A decorator that names
something Griffe cannot find is reported as a warning, which fails ``mkdocs
build --strict``.

The docstrings are written for Sphinx-aware readers (``:class:`~actors.Gateway```,
``:meth:`drain```); Markdown has no such roles, so each is rewritten to the
code span of its name (``~`` keeps the last component, as Sphinx shows it).

Used by ``mkdocs.yml`` (``extensions``); runs in the ``mkdocs build`` process,
once per package load; not part of the installed package.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import griffe

_DOC_OF = re.compile(r"^_doc_of\((?P<owner>\w+)\.(?P<method>\w+)\)$")
_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|attr|data|exc|obj|const):"
                   r"`(?P<tilde>~?)(?P<name>[^`]+)`")
logger = logging.getLogger("mkdocs.plugins.griffe_doc_of")


class DocOf(griffe.Extension):
    """Copy ``@_doc_of(Owner.method)``'s docstring onto the decorated method."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader,
                   **kwargs: Any) -> None:
        """Walk ``pkg`` once it is loaded (Griffe's hook; the build's thread)."""
        objects = _walk(pkg)
        for obj in objects:
            if isinstance(obj, griffe.Function):
                _copy_doc(obj)
        for obj in objects:
            if obj.docstring is not None:
                obj.docstring.value = unrole(obj.docstring.value)


def unrole(text: str) -> str:
    """``text`` with each Sphinx role written as a code span of its (shortened) name.

    >>> unrole("see :class:`~actors.errors.GatewayClosed` and :meth:`Gateway.open`")
    'see `GatewayClosed` and `Gateway.open`'
    """
    def code(match: re.Match[str]) -> str:
        name = match["name"]
        return f"`{name.rsplit('.', 1)[-1] if match['tilde'] else name}`"
    return _ROLE.sub(code, text)


def _walk(obj: griffe.Object) -> list[griffe.Object]:
    """``obj`` and every module, class and function under it (not through aliases)."""
    found = [obj]
    for member in obj.members.values():
        if not member.is_alias and isinstance(member, griffe.Object):
            found.extend(_walk(member))
    return found


def _copy_doc(func: griffe.Function) -> None:
    """Give ``func`` the docstring its ``_doc_of`` decorator names, if it has one."""
    for decorator in func.decorators:
        match = _DOC_OF.match(str(decorator.value))
        if match is None:
            continue
        try:
            owner = func.module.members[match["owner"]]
            source = owner.final_target.members[match["method"]]  # type: ignore[union-attr]
        except (KeyError, griffe.AliasResolutionError) as exc:
            logger.warning("%s: cannot find %s (%s)", func.path, decorator.value, exc)
            continue
        if source.docstring is None:
            logger.warning("%s: %s has no docstring", func.path, decorator.value)
            continue
        func.docstring = griffe.Docstring(
            source.docstring.value, lineno=source.docstring.lineno,
            endlineno=source.docstring.endlineno, parent=func,
            parser=source.docstring.parser, parser_options=source.docstring.parser_options)
