"""Compare how ``ssa classify``'s code path decided a tool's rows with the action log.

Ground truth is what the harness did. Rows are matched to actions by text:
an action's ``text`` (the typed prompt, the program-driven prompt, a shell
command) is searched in every string of every row, so tests use texts that
occur nowhere else (a nonce in each prompt).

* A ``human`` action (a typed prompt) is found when exactly one row holding its
  text is decided human; a second such row is a false positive (a double
  notice), none is a false negative.
* Every other row decided human is a false positive.
* An action with a text that no row holds at all is ``unseen`` (the tool did
  not write what the harness expected; a test should assert there is none).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tests.harness.actions import Action
from tests.harness.tools import DecidedRow

__all__ = ["Comparison", "compare"]


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`compare`.

    Attributes:
        rows: every decided row.
        actions: the actions compared (with a text).
        true_positives: ``(action, row)`` pairs: a typed action and its human row.
        false_positives: rows decided human that match no typed action (or
            match one a second time).
        false_negatives: typed actions no human row holds.
        unseen: actions whose text no row holds at all.
    """

    rows: tuple[DecidedRow, ...]
    actions: tuple[Action, ...]
    true_positives: tuple[tuple[Action, DecidedRow], ...]
    false_positives: tuple[DecidedRow, ...]
    false_negatives: tuple[Action, ...]
    unseen: tuple[Action, ...]

    @property
    def precision(self) -> float:
        """TP / (TP + FP); 1.0 when nothing was decided human."""
        found = len(self.true_positives) + len(self.false_positives)
        return len(self.true_positives) / found if found else 1.0

    @property
    def recall(self) -> float:
        """TP / (TP + FN); 1.0 when there was no typed action."""
        wanted = len(self.true_positives) + len(self.false_negatives)
        return len(self.true_positives) / wanted if wanted else 1.0

    def rows_of(self, action: Action) -> list[DecidedRow]:
        """The rows holding ``action``'s text."""
        return [r for r in self.rows if action.text and r.holds(action.text)]

    def report(self) -> str:
        """A readable account for an assertion message: figures, then every mismatch
        and every row that holds an action's text with its decision."""
        lines = [f"precision {self.precision:.3f}, recall {self.recall:.3f} "
                 f"({len(self.true_positives)} TP, {len(self.false_positives)} FP, "
                 f"{len(self.false_negatives)} FN, {len(self.unseen)} unseen; "
                 f"{len(self.rows)} rows)"]
        lines += [f"  FP: {_row(r)}" for r in self.false_positives]
        lines += [f"  FN: {a.kind} {a.text!r}" for a in self.false_negatives]
        lines += [f"  unseen: {a.kind} {a.text!r}" for a in self.unseen]
        for action in self.actions:
            lines.append(f"  action #{action.seq} {action.kind} human={action.human} "
                         f"{action.text!r}:")
            lines += [f"    {_row(r)}" for r in self.rows_of(action)]
        return "\n".join(lines)


def _row(row: DecidedRow) -> str:
    return (f"{row.path.name}:{row.unit} {row.kind} -> human={row.human} ({row.reason})")


def compare(rows: Iterable[DecidedRow], actions: Iterable[Action]) -> Comparison:
    """Compare decided ``rows`` with ``actions`` (see the module docstring); pure."""
    all_rows = tuple(rows)
    with_text = tuple(a for a in actions if a.text)
    tp: list[tuple[Action, DecidedRow]] = []
    fn: list[Action] = []
    matched: set[int] = set()
    for action in (a for a in with_text if a.human):
        assert action.text is not None
        hits = [i for i, r in enumerate(all_rows) if r.human and r.holds(action.text)]
        if hits:
            tp.append((action, all_rows[hits[0]]))
            matched.add(hits[0])
        else:
            fn.append(action)
    fp = tuple(r for i, r in enumerate(all_rows) if r.human and i not in matched)
    unseen = tuple(a for a in with_text
                   if a.text is not None and not any(r.holds(a.text) for r in all_rows))
    return Comparison(all_rows, with_text, tuple(tp), fp, tuple(fn), unseen)
