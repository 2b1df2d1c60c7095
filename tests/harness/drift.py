"""Version drift: run the scripted actions on the newest tool versions and list what is new.

A maintainer runs it at each release of any tool::

    python -m tests.harness.drift                       # every tool, newest versions
    python -m tests.harness.drift --tool codex=0.171.0  # one tool, a given version
    python -m tests.harness.drift --tool claude --json  # newest Claude Code, JSON out

The npm tools are installed into a scratch folder (``--dir``, default a new
temporary directory; never the shared cache of the pins): a copy of
``tests/agents/package.json`` with the asked versions, locked with ``npm
install --package-lock-only`` and installed by :func:`tests.harness.install.install`
with ``SSA_AGENTS_DIR`` pointing into the scratch folder. Aider runs from its
pinned environment (:mod:`tests.harness.pyinstall`); another Aider version is
reported as not driven (its lock needs a full ``pip freeze`` first).

Each tool then runs the scripted actions in tmux against a fake model server:
two typed prompts, the second answered with a shell call (Aider, which offers
the model no tools, a text); each continuation into a new transcript whose
original is then moved elsewhere or deleted
(:func:`tests.harness.scripted.copy_without_original`,
:func:`~tests.harness.scripted.session_copy_without_original`); each fixed
prompt a command sends (:func:`~tests.harness.scripted.fixed_prompt`). Every
unit of the transcripts they wrote is decided through ``ssa classify``'s code
path. A last section decides a Windows-recorded session of every source that
the test kit builds (:mod:`tests.harness.windows_kit`; no CLI). The report
lists, per tool:

* units decided with an "unknown" reason code (:data:`UNKNOWN_REASONS`: the
  readers' own "not seen before, not typed" decision) and the kinds the
  classifiers logged once as unknown (:mod:`actors.upstream.kindlog`);
* row kinds (``type``/``role`` as the profile names them) and JSON key paths
  not in the known set (:data:`BASELINE`, ``tests/harness/drift_baseline.json``,
  recorded with ``--record`` on versions whose readers were checked), each
  with the reason codes its units got;
* the comparison with the action log (precision/recall per scripted action;
  ``FAIL`` where a scripted action was not decided exactly).

Precision first: nothing here changes a decision; a shape the readers have
not seen is decided not typed and logged once by the readers themselves.
The report-building part (:func:`survey`, :func:`drift_of`, :func:`render`)
is pure and tested without network (``tests/test_harness_drift.py``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BASELINE", "NPM_PACKAGES", "PYPI_PACKAGES", "UNKNOWN_REASONS", "Drift", "ToolSurvey",
           "Unit", "baseline_of", "drift_of", "drive", "install_npm", "key_paths", "main",
           "newest_version", "pinned_versions", "render", "scripted_actions", "survey",
           "windows_kit"]

NPM_PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex",
                "opencode": "opencode-ai", "pi": "@mariozechner/pi-coding-agent",
                "gemini": "@google/gemini-cli", "qwen": "@qwen-code/qwen-code"}
"""Harness tool name -> npm package."""
PYPI_PACKAGES = {"aider": "aider-chat"}
"""Harness tool name -> PyPI distribution."""
UNKNOWN_REASONS = frozenset({"unknown_kind", "unknown_role", "unknown_part", "unexpected_shape"})
"""Reason codes the readers give a row kind (or, Codex's ``unexpected_shape``, a row
of a known kind with fields of another type) they have not seen: decided not typed."""
BASELINE = Path(__file__).with_name("drift_baseline.json")
"""The known set: ``{tool: {"kinds": [...], "keys": [...]}}``."""
KEY_DEPTH = 3
"""How deep :func:`key_paths` descends into a row (deeper keys are tool arguments and text)."""
LOOKUP_TIMEOUT_S = 60.0
"""Longest one ``npm view``/``pip index`` may take, in seconds."""

_UNKNOWN_LOG = re.compile(r"^(?P<tool>.+) row kind '(?P<kind>.*)' is unknown")


@dataclass(frozen=True)
class Unit:
    """One decided unit, reduced to what the report needs (no text).

    Attributes:
        kind: the row's kind as the profile names it (``user``, ``event_msg:user_message``).
        reason: the classifier's reason code.
        human: the decision.
        keys: the row's JSON key paths (:func:`key_paths`); empty for non-JSON stores.
    """

    kind: str
    reason: str
    human: bool
    keys: frozenset[str] = frozenset()


@dataclass
class ToolSurvey:
    """What one tool's run produced (:func:`survey`).

    Attributes:
        tool: the harness tool name.
        version: the version driven.
        kinds: kind -> reason code -> unit count.
        keys: key path -> reason codes of the units holding it.
        unknown: ``(kind, reason)`` -> count of units with an :data:`UNKNOWN_REASONS` code.
        logged: kinds the classifiers logged as unknown (:mod:`actors.upstream.kindlog`).
        comparison: the action-log comparison's first report line.
        error: why the run failed or was not driven (``""``: it ran).
        actions: scripted action -> ``"OK ..."``/``"FAIL ..."`` and its comparison line.
    """

    tool: str
    version: str
    kinds: dict[str, Counter[str]] = field(default_factory=dict)
    keys: dict[str, set[str]] = field(default_factory=dict)
    unknown: Counter[tuple[str, str]] = field(default_factory=Counter)
    logged: list[str] = field(default_factory=list)
    comparison: str = ""
    error: str = ""
    actions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Drift:
    """What a :class:`ToolSurvey` holds that the known set does not (:func:`drift_of`).

    Attributes:
        tool, version: as surveyed.
        new_kinds: kind -> reason codes (``{"reason": count}``), kinds not in the known set.
        new_keys: key path -> sorted reason codes, keys not in the known set.
        unknown: ``"kind (reason)"`` -> count, units decided with an unknown reason.
        logged: kinds logged once as unknown.
        comparison: the action-log comparison (precision/recall).
        error: why the run failed or was not driven (``""``: it ran).
        actions: scripted action -> ``"OK ..."``/``"FAIL ..."`` and its comparison line.
    """

    tool: str
    version: str
    new_kinds: dict[str, dict[str, int]]
    new_keys: dict[str, list[str]]
    unknown: dict[str, int]
    logged: list[str]
    comparison: str
    error: str = ""
    actions: dict[str, str] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """It ran, every scripted action was decided exactly, and nothing is new or
        unknown."""
        return not (self.error or self.new_kinds or self.new_keys or self.unknown
                    or self.logged or any(not v.startswith("OK") for v in self.actions.values()))

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field plus ``clean``."""
        return {"tool": self.tool, "version": self.version, "clean": self.clean,
                "new_kinds": self.new_kinds, "new_keys": self.new_keys,
                "unknown": self.unknown, "logged": self.logged,
                "comparison": self.comparison, "error": self.error, "actions": self.actions}


# -- pure report building -----------------------------------------------------------------------

def key_paths(value: Any, depth: int = KEY_DEPTH, prefix: str = "") -> Iterator[str]:
    """Every key path of a JSON value down to ``depth`` levels (``message.content[].type``).

    List items share one path (``[]``); the values are never looked at beyond
    their keys. Pure.
    """
    if depth <= 0:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            yield path
            yield from key_paths(item, depth - 1, path)
    elif isinstance(value, list):
        for item in value:
            yield from key_paths(item, depth, f"{prefix}[]")


def survey(tool: str, version: str, units: Iterable[Unit], logged: Iterable[str] = (),
           comparison: str = "", error: str = "") -> ToolSurvey:
    """Fold decided units into a :class:`ToolSurvey`; pure."""
    out = ToolSurvey(tool, version, logged=sorted(set(logged)), comparison=comparison,
                     error=error)
    for unit in units:
        out.kinds.setdefault(unit.kind, Counter())[unit.reason] += 1
        for key in unit.keys:
            out.keys.setdefault(key, set()).add(unit.reason)
        if unit.reason in UNKNOWN_REASONS:
            out.unknown[(unit.kind, unit.reason)] += 1
    return out


def drift_of(found: ToolSurvey, known: Mapping[str, Any]) -> Drift:
    """Compare a survey with the known set of its tool (``{"kinds": [...], "keys": [...]}``;
    a missing entry knows nothing); pure."""
    kinds, keys = set(known.get("kinds", ())), set(known.get("keys", ()))
    return Drift(
        found.tool, found.version,
        {k: dict(sorted(r.items())) for k, r in sorted(found.kinds.items()) if k not in kinds},
        {k: sorted(r) for k, r in sorted(found.keys.items()) if k not in keys},
        {f"{k} ({r})": n for (k, r), n in sorted(found.unknown.items())},
        list(found.logged), found.comparison, found.error, dict(found.actions))


def baseline_of(surveys: Iterable[ToolSurvey]) -> dict[str, dict[str, list[str]]]:
    """The known set a run's surveys make (what ``--record`` writes); pure."""
    return {s.tool: {"kinds": sorted(s.kinds), "keys": sorted(s.keys)} for s in surveys}


def render(drifts: Sequence[Drift]) -> str:
    """A readable report of ``drifts``, one section per tool; pure."""
    lines: list[str] = []
    for d in drifts:
        verdict = "RUN FAILED" if d.error else "nothing new" if d.clean else "DRIFT"
        lines.append(f"== {d.tool} {d.version}: {verdict}")
        if d.error:
            lines.append(f"   error: {d.error}")
        if d.comparison:
            lines.append(f"   actions: {d.comparison}")
        for name, line in d.actions.items():
            lines.append(f"   {name}: {line}")
        for kind, reasons in d.new_kinds.items():
            lines.append(f"   new row kind {kind!r}: "
                         + ", ".join(f"{r} x{n}" for r, n in reasons.items()))
        for key, key_reasons in d.new_keys.items():
            lines.append(f"   new key {key!r}: reasons {', '.join(key_reasons)}")
        for what, n in d.unknown.items():
            lines.append(f"   unknown-kind unit: {what} x{n}")
        for kind in d.logged:
            lines.append(f"   logged once as unknown: {kind}")
    return "\n".join(lines) + "\n"


# -- versions and installs ----------------------------------------------------------------------

def newest_version(tool: str) -> str:
    """The newest version the registry serves for ``tool`` (``npm view``/``pip index``).

    Blocks for the look-up (at most :data:`LOOKUP_TIMEOUT_S`).

    Raises:
        RuntimeError: the look-up failed. KeyError: an unknown tool.
    """
    if tool in NPM_PACKAGES:
        command = ["npm", "view", NPM_PACKAGES[tool], "version"]
    else:
        command = [sys.executable, "-m", "pip", "index", "versions", PYPI_PACKAGES[tool]]
    done = subprocess.run(command, capture_output=True, text=True, timeout=LOOKUP_TIMEOUT_S,
                          check=False)
    text = done.stdout.strip()
    if tool in PYPI_PACKAGES:
        match = re.search(r"\(([^)]+)\)", text.splitlines()[0] if text else "")
        text = match.group(1) if match else ""
    if done.returncode != 0 or not text:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()[-300:]}")
    return text.splitlines()[-1].strip()


def pinned_versions() -> dict[str, str]:
    """Tool -> the pinned version (``tests/agents/package.json``, the Aider lock)."""
    from tests.harness.install import AGENTS_DIR
    deps = json.loads((AGENTS_DIR / "package.json").read_text())["dependencies"]
    out = {tool: str(deps[pkg]) for tool, pkg in NPM_PACKAGES.items() if pkg in deps}
    for line in (AGENTS_DIR / "aider-requirements.txt").read_text().splitlines():
        if line.startswith("aider-chat=="):
            out["aider"] = line.split("==", 1)[1].strip()
    return out


def install_npm(versions: Mapping[str, str], scratch: Path) -> Any:
    """Lock and install ``versions`` (npm tools only; others at their pins) under ``scratch``.

    Returns the :class:`~tests.harness.install.AgentInstall`. Blocks for the
    install (minutes when cold). Sets ``SSA_AGENTS_DIR`` in this process.

    Raises:
        InstallError: npm failed.
    """
    from tests.harness.install import AGENTS_DIR, install, lock_hash
    agents = scratch / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((AGENTS_DIR / "package.json").read_text())
    for tool, version in versions.items():
        if tool in NPM_PACKAGES:
            manifest["dependencies"][NPM_PACKAGES[tool]] = version
    (agents / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    shutil.copy2(AGENTS_DIR / "package-lock.json", agents / "package-lock.json")
    done = subprocess.run(["npm", "install", "--package-lock-only", "--no-audit", "--no-fund",
                           "--loglevel=error"], cwd=agents, capture_output=True, text=True,
                          timeout=900, check=False)
    if done.returncode != 0:
        from tests.harness.install import InstallError
        raise InstallError(f"npm install --package-lock-only failed: {done.stderr[-500:]}")
    os.environ["SSA_AGENTS_DIR"] = str(scratch / f"npm-{lock_hash(agents)}")
    return install(agents)


# -- driving ------------------------------------------------------------------------------------

class _Collect(logging.Handler):
    """Collects the kinds :mod:`actors.upstream.kindlog` logs as unknown."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.kinds: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        match = _UNKNOWN_LOG.match(record.getMessage())
        if match:
            self.kinds.append((match["tool"], match["kind"]))


def _raw_rows(path: Path) -> list[Any] | None:
    """A JSONL transcript's parsed lines (``None`` for a line that is not JSON), or ``None``
    for a transcript that is not JSONL (OpenCode's database, Aider's Markdown)."""
    if path.suffix != ".jsonl":
        return None
    out: list[Any] = []
    for line in path.read_bytes().split(b"\n"):
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append(None)
    return out


def _units(rows: Iterable[Any]) -> list[Unit]:
    """Decided rows (:class:`~tests.harness.tools.DecidedRow`) with their JSON keys."""
    cache: dict[Path, list[Any] | None] = {}
    out: list[Unit] = []
    for row in rows:
        if row.path not in cache:
            cache[row.path] = _raw_rows(row.path)
        raw = cache[row.path]
        keys: frozenset[str] = frozenset()
        if raw is not None and isinstance(row.unit, int) and row.unit < len(raw):
            keys = frozenset(key_paths(raw[row.unit]))
        out.append(Unit(row.kind, row.reason, row.human, keys))
    return out


def drive(tool: str, version: str, install: Any, root: Path) -> ToolSurvey:
    """Run the scripted actions on ``tool`` at ``version`` and survey its transcripts.

    Blocks for the run (a minute or two); every process it started is ended
    before it returns. A failed run is surveyed as far as it got, the error
    in ``comparison``.
    """
    from tests.harness.compare import compare
    from tests.harness.session import Harness
    from tests.harness.tools import tool_named
    base = type(tool_named(tool))
    profile = type(f"{base.__name__}At{version}", (base,), {"version": version})()
    collect = _Collect()
    upstream = logging.getLogger("actors.upstream")
    upstream.addHandler(collect)
    nonce = secrets.token_hex(4)
    comparison, error, rows = "", "", []
    actions: dict[str, str] = {}
    root.mkdir(parents=True, exist_ok=True)
    harness = Harness(Path(tempfile.mkdtemp(prefix=f"{tool}-", dir=root)), install)
    try:
        agent = harness.start(profile, project=harness.project(git=True))
        try:
            from tests.harness.script import Text
            agent.script(Text(f"first answer {nonce}"))
            agent.prompt(f"hello one {nonce}")
            try:
                agent.script_shell(f"echo shell-marker-{nonce}", then=f"done {nonce}")
                shell = True
            except NotImplementedError:  # Aider offers the model no tools: a text turn
                agent.script(Text(f"done {nonce}"))
                shell = False
            agent.prompt(f"please run the command {nonce}")
            if shell:
                agent.model.wait_main(3)
        except Exception as exc:
            error = f"run failed: {_short(exc)}"
        rows = agent.decided_rows()
        comparison = compare(rows, harness.log.actions(agent=agent.name)).report().splitlines()[0]
        agent.quit()
        actions, more = scripted_actions(harness, profile)
        rows += more
    except Exception as exc:
        error = error or f"start failed: {_short(exc)}"
    finally:
        harness.close()
        upstream.removeHandler(collect)
    out = survey(tool, version, _units(rows), [k for _, k in collect.kinds], comparison, error)
    out.actions.update(actions)
    return out


def scripted_actions(harness: Any, profile: Any) -> tuple[dict[str, str], list[Any]]:
    """Run issue 32's scripted actions on ``profile``'s CLI in ``harness``: every
    continuation (:meth:`~tests.harness.tools.AgentTool.continuations`) with its
    original moved and deleted, every session continuation, every fixed prompt.

    Returns ``({action: "OK line"/"FAIL line"}, every decided row)``. A failed action
    is reported, not raised. Blocks for the runs (tens of seconds each).
    """
    from tests.harness.scripted import (
        HOW,
        Outcome,
        copy_without_original,
        fixed_prompt,
        session_copy_without_original,
    )
    runs: list[tuple[str, Any]] = []
    for variant in profile.continuations(Path("/nonexistent/session.jsonl")):
        for how in HOW:
            runs.append((f"{variant}/{how}", lambda v=variant, h=how: copy_without_original(
                harness, profile, h, v)))
    for variant in profile.session_continuations("ses_x"):
        runs.append((f"{variant}/deleted", lambda v=variant: session_copy_without_original(
            harness, profile, v)))
    for command in profile.fixed_prompts:
        runs.append((f"fixed prompt {command}", lambda c=command: fixed_prompt(
            harness, profile, c)))
    lines: dict[str, str] = {}
    rows: list[Any] = []
    for name, run in runs:
        sys.stderr.write(f"  {name}...\n")
        try:
            outcome: Outcome = run()
        except Exception as exc:
            lines[name] = f"FAIL {_short(exc)}"
            continue
        lines[name] = f"{'OK' if outcome.exact else 'FAIL'} {outcome.line()}"
        rows += outcome.result.rows
    return lines, rows


def windows_kit(scratch: Path) -> Drift:
    """The Windows-recorded session of every kit source (:mod:`tests.harness.windows_kit`),
    as one report section (tool ``kit``, version ``windows``). Blocks on file I/O."""
    from tests.harness.windows_kit import SOURCES, windows_session
    lines: dict[str, str] = {}
    for source in sorted(SOURCES):
        try:
            result = windows_session(source, scratch / "windows-kit" / source)
        except Exception as exc:
            lines[source] = f"FAIL {_short(exc)}"
            continue
        exact = ((result.precision, result.recall) == (1.0, 1.0) and not result.unseen
                 and len(result.true_positives) == 2)
        lines[source] = f"{'OK' if exact else 'FAIL'} {result.report().splitlines()[0]}"
    return Drift("kit", "windows", {}, {}, {}, [], "", "", lines)


def _short(exc: Exception) -> str:
    """``Type: first line of the message`` (a screen dump is cut to its first line)."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:300]}"


def _parse_tools(specs: Sequence[str]) -> dict[str, str | None]:
    """``["codex=0.171.0", "claude"]`` -> ``{"codex": "0.171.0", "claude": None}``."""
    out: dict[str, str | None] = {}
    for spec in specs:
        name, _, version = spec.partition("=")
        if name not in NPM_PACKAGES and name not in PYPI_PACKAGES:
            raise SystemExit(f"unknown tool {name!r}: one of "
                             f"{', '.join([*NPM_PACKAGES, *PYPI_PACKAGES])}")
        out[name] = version or None
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.harness.drift``; returns the exit status (1: drift found)."""
    parser = argparse.ArgumentParser(prog="python -m tests.harness.drift",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tool", action="append", default=[], metavar="NAME[=VERSION]",
                        help="a tool to drive (repeatable; default every tool, newest version)")
    parser.add_argument("--pinned", action="store_true",
                        help="drive the pinned versions instead of the newest")
    parser.add_argument("--dir", type=Path, help="scratch folder (default: a new temp dir)")
    parser.add_argument("--baseline", type=Path, default=BASELINE, help="the known set")
    parser.add_argument("--record", action="store_true",
                        help="after the report, merge this run's kinds and keys into --baseline")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asked = _parse_tools(args.tool) or dict.fromkeys([*NPM_PACKAGES, *PYPI_PACKAGES])
    pins = pinned_versions()
    versions = {t: v or (pins[t] if args.pinned else newest_version(t)) for t, v in asked.items()}
    scratch = args.dir or Path(tempfile.mkdtemp(prefix="ssa-drift-"))
    install = install_npm(versions, scratch)
    surveys: list[ToolSurvey] = []
    for tool, version in versions.items():
        if tool in PYPI_PACKAGES and version != pins.get(tool):
            surveys.append(ToolSurvey(tool, version, error=(
                f"not driven: only the pinned {pins.get(tool)} is installed; "
                "freeze a lock for this version into tests/agents/aider-requirements.txt")))
            continue
        sys.stderr.write(f"driving {tool} {version}...\n")
        surveys.append(drive(tool, version, install, scratch / "runs"))
    known: dict[str, Any] = (json.loads(args.baseline.read_text())
                             if args.baseline.is_file() else {})
    drifts = [drift_of(s, known.get(s.tool, {})) for s in surveys]
    drifts.append(windows_kit(scratch))
    if args.record:
        for tool, entry in baseline_of(s for s in surveys if s.kinds and not s.error).items():
            old = known.get(tool, {})
            known[tool] = {k: sorted(set(old.get(k, ())) | set(entry[k])) for k in entry}
        args.baseline.write_text(json.dumps(dict(sorted(known.items())), indent=1) + "\n")
    if args.json:
        sys.stdout.write(json.dumps([d.as_json() for d in drifts], indent=1) + "\n")
    else:
        sys.stdout.write(render(drifts))
    return 0 if all(d.clean for d in drifts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
