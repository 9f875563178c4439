"""Scored units: one planned (observer model, judge model, probe, view) and what became of it.

The statistics read nothing else. A unit comes from a pair of export rows (the observer step
and the judge step of one chain) or from a labels file; `units_from_rows` validates plain dicts
with these fields (docs/ctxgap.md, "Scored units"):

    observer_model, judge_model, probe_id, task_id, checkpoint, category, view,
    importance (0-3), observer_status, judge_status, verdict (0, 0.5, 1 or null),
    atom_id (optional; defaults to probe_id), sample (optional, default 0: which of several
    answers to the same unit this is)

Outcome of a unit (intention-to-evaluate: every planned unit stays in the denominator):

- `scored`: the judge's verdict parsed; the score is the verdict;
- `empty_answer`: the observer answered with nothing (its `parse_error`): a wrong answer, 0;
- `invalid_verdict`: the judge answered and its verdict did not parse: 0, not covered;
- `failed`: the observer or judge call failed after retries: 0, not covered;
- `missing`: never answered (blocked, unfinished, or no label): 0, not covered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from evaltally.errors import DataError

from .data import Probe

STATUSES = ("ok", "parse_error", "failed", "blocked", "unfinished")
VERDICTS = (0.0, 0.5, 1.0)
OUTCOMES = ("scored", "empty_answer", "invalid_verdict", "failed", "missing")
#: Outcomes that count as evaluated in `coverage` and in scored-only accuracy.
COVERED = ("scored", "empty_answer")
_NAME_FIELDS = (
    "observer_model",
    "judge_model",
    "probe_id",
    "task_id",
    "checkpoint",
    "category",
    "view",
)


@dataclass(frozen=True, slots=True)
class Unit:
    observer_model: str
    judge_model: str
    probe_id: str
    task_id: str
    checkpoint: str
    category: str
    view: str
    importance: int
    atom_id: str
    observer_status: str
    judge_status: str
    verdict: float | None
    sample: int = 0
    """Which answer of the unit this is, when a run asks each unit several times."""
    judgments: tuple[int, ...] | None = None
    """A pooled unit (`pool`): how many of its judgments ended in each outcome (OUTCOMES
    order); its `verdict` is their mean score, every judgment in the denominator."""
    covered_mean: float | None = None
    """A pooled unit: the mean score of its covered judgments (None: none covered)."""

    @classmethod
    def of(
        cls,
        probe: Probe,
        view: str,
        *,
        models: tuple[str, str],
        statuses: tuple[str, str],
        verdict: float | None,
    ) -> Unit:
        """The unit of `probe` in `view` for (observer model, judge model) `models`, whose steps
        ended with (observer status, judge status) `statuses`."""
        return cls(
            observer_model=models[0],
            judge_model=models[1],
            probe_id=probe.probe_id,
            task_id=probe.task_id,
            checkpoint=probe.checkpoint,
            category=probe.category,
            view=view,
            importance=probe.importance,
            atom_id=probe.atom_id,
            observer_status=statuses[0],
            judge_status=statuses[1],
            verdict=verdict,
        )

    @property
    def outcome(self) -> str:
        if self.judgments is not None:
            return "scored"
        if self.observer_status == "parse_error":
            return "empty_answer"
        if self.observer_status == "ok" and self.judge_status == "ok":
            return "scored"
        if self.judge_status == "parse_error":
            return "invalid_verdict"
        if "failed" in (self.observer_status, self.judge_status):
            return "failed"
        return "missing"

    @property
    def score(self) -> float:
        return self.verdict if self.outcome == "scored" and self.verdict is not None else 0.0

    @property
    def covered(self) -> float:
        """1 or 0; for a pooled unit, the share of its judgments that are covered."""
        if self.judgments is not None:
            return sum(n for o, n in zip(OUTCOMES, self.judgments, strict=True) if o in COVERED) / (
                sum(self.judgments)
            )
        return float(self.outcome in COVERED)

    @property
    def covered_score(self) -> float | None:
        """The score over covered judgments only (None: nothing covered)."""
        if self.judgments is not None:
            return self.covered_mean
        return self.score if self.outcome in COVERED else None

    def outcome_counts(self) -> dict[str, int]:
        if self.judgments is not None:
            return dict(zip(OUTCOMES, self.judgments, strict=True))
        return {o: int(o == self.outcome) for o in OUTCOMES}


def pool(units: Iterable[Unit], judge: str) -> list[Unit]:
    """One unit per (observer, probe, view) whose score is the mean over all its judgments
    (judge models and samples; each unscored judgment counts 0), named `judge`."""
    groups: dict[tuple[str, str, str], list[Unit]] = {}
    for u in units:
        groups.setdefault((u.observer_model, u.probe_id, u.view), []).append(u)
    out = []
    for group in groups.values():
        first = group[0]
        covered = [u.score for u in group if u.outcome in COVERED]
        counts = tuple(sum(u.outcome == o for u in group) for o in OUTCOMES)
        out.append(
            replace(
                first,
                judge_model=judge,
                observer_status="ok",
                judge_status="ok",
                verdict=sum(u.score for u in group) / len(group),
                sample=0,
                judgments=counts,
                covered_mean=sum(covered) / len(covered) if covered else None,
            )
        )
    return out


def _field_error(where: str, field: str, reason: str) -> DataError:
    return DataError(f"{where}: {field}: {reason}")


def unit_from_row(where: str, row: Mapping[str, Any]) -> Unit:
    """One validated unit; `where` names the row in errors (e.g. `export.jsonl:12`)."""
    names: dict[str, str] = {}
    for field in _NAME_FIELDS:
        value = row.get(field)
        if not isinstance(value, str) or not value:
            raise _field_error(where, field, "must be a non-empty string")
        names[field] = value
    atom = row.get("atom_id", names["probe_id"])
    if not isinstance(atom, str) or not atom:
        raise _field_error(where, "atom_id", "must be a non-empty string")
    importance = row.get("importance")
    if isinstance(importance, bool) or not isinstance(importance, int) or not 0 <= importance <= 3:
        raise _field_error(where, "importance", f"must be an integer 0-3, got {importance!r}")
    statuses = {}
    for field in ("observer_status", "judge_status"):
        if row.get(field) not in STATUSES:
            raise _field_error(where, field, f"must be one of {', '.join(STATUSES)}")
        statuses[field] = str(row[field])
    sample = row.get("sample", 0)
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise _field_error(where, "sample", f"must be an integer >= 0, got {sample!r}")
    return Unit(
        observer_model=names["observer_model"],
        judge_model=names["judge_model"],
        probe_id=names["probe_id"],
        task_id=names["task_id"],
        checkpoint=names["checkpoint"],
        category=names["category"],
        view=names["view"],
        importance=importance,
        atom_id=atom,
        observer_status=statuses["observer_status"],
        judge_status=statuses["judge_status"],
        verdict=_verdict(where, row.get("verdict"), statuses),
        sample=sample,
    )


def _verdict(where: str, value: Any, statuses: Mapping[str, str]) -> float | None:
    answered = statuses["observer_status"] == "ok" and statuses["judge_status"] == "ok"
    if not answered:
        if value is not None:
            raise _field_error(where, "verdict", "must be null unless both steps are ok")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value not in VERDICTS:
        raise _field_error(where, "verdict", f"must be 0, 0.5 or 1, got {value!r}")
    return float(value)


def check_units(units: Iterable[tuple[str, Unit]]) -> list[Unit]:
    """Refuse a unit planned twice, and a probe described two ways (task, checkpoint,
    category, importance or atom differ between its units)."""
    out: list[Unit] = []
    seen: dict[tuple[str, str, str, str, int], str] = {}
    probes: dict[str, tuple[str, tuple[str, str, str, int, str]]] = {}
    for where, u in units:
        key = (u.observer_model, u.judge_model, u.probe_id, u.view, u.sample)
        if key in seen:
            raise _field_error(
                where,
                "view",
                f"probe {u.probe_id!r} in view {u.view!r} for "
                f"observer {u.observer_model!r} and judge {u.judge_model!r} "
                f"(sample {u.sample}) is already given at {seen[key]}",
            )
        seen[key] = where
        meta = (u.task_id, u.checkpoint, u.category, u.importance, u.atom_id)
        first_where, first = probes.setdefault(u.probe_id, (where, meta))
        if first != meta:
            raise _field_error(
                where,
                "probe_id",
                f"probe {u.probe_id!r} has task, checkpoint, "
                f"category, importance or atom {meta} here but {first} at "
                f"{first_where}",
            )
        out.append(u)
    return out


def units_from_rows(rows: Iterable[Mapping[str, Any]], source: str = "rows") -> list[Unit]:
    """Validate unit rows; errors name `SOURCE:N`, N the row's 1-based position."""
    return check_units(
        (f"{source}:{i}", unit_from_row(f"{source}:{i}", row)) for i, row in enumerate(rows, 1)
    )
