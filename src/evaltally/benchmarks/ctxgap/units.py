"""Scored units: one planned (observer model, judge model, probe, view) and what became of it.

The statistics read nothing else. A unit comes from a pair of export rows (the observer step
and the judge step of one chain) or from a labels file; `units_from_rows` validates plain dicts
with these fields (docs/ctxgap.md, "Scored units"):

    observer_model, judge_model, probe_id, task_id, checkpoint, category, view,
    importance (0-3), observer_status, judge_status, verdict (0, 0.5, 1 or null),
    atom_id (optional; defaults to probe_id)

Outcome of a unit (intention-to-evaluate: every planned unit stays in the denominator):

- `scored`: the judge's verdict parsed; the score is the verdict;
- `empty_answer`: the observer answered with nothing (its `parse_error`): a wrong answer, 0;
- `invalid_verdict`: the judge answered and its verdict did not parse: 0, not covered;
- `failed`: the observer or judge call failed after retries: 0, not covered;
- `missing`: never answered (blocked, unfinished, or no label): 0, not covered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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
    def covered(self) -> bool:
        return self.outcome in COVERED


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
    return Unit(
        **names,
        importance=importance,
        atom_id=atom,
        **statuses,
        verdict=_verdict(where, row.get("verdict"), statuses),
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
    seen: dict[tuple[str, str, str, str], str] = {}
    probes: dict[str, tuple[str, tuple[str, str, str, int, str]]] = {}
    for where, u in units:
        key = (u.observer_model, u.judge_model, u.probe_id, u.view)
        if key in seen:
            raise _field_error(
                where,
                "view",
                f"probe {u.probe_id!r} in view {u.view!r} for "
                f"observer {u.observer_model!r} and judge {u.judge_model!r} is "
                f"already given at {seen[key]}",
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
