"""Export rows -> `GradedCall` groups, one group per (model, benchmark, protocol).

Intention-to-evaluate: every planned call is a row of the export; a row whose status is not
`ok` has no prediction and counts wrong (`failed`, `blocked`, `unfinished`: not answered;
`parse_error`: answered, unparsed). A row carries the CTE oracle fields (docs/export.md).

A row answered only after a later step of its chain had been answered
(`answered_after_later_steps`: a free-rollout step that failed, was shown to the later steps as
having no answer, and got its answer on resume) is scored as no prediction, as the release
scores that step: the chain the model ran never had the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaltally.benchmarks.cte.grade import GradedCall, value_match
from evaltally.errors import DataError
from evaltally.ledger.export_formats import read_export

ORACLE_FIELDS = ("scenario_id", "service", "intervention_kind", "future_index", "target")
GroupKey = tuple[str, str, str]
"""(model, benchmark label, protocol)."""


def graded_from_row(row: dict[str, Any]) -> GradedCall:
    status = row.get("status")
    late = bool(row.get("answered_after_later_steps"))
    ok = status == "ok" and not late
    return GradedCall(
        scenario_id=str(row["scenario_id"]),
        service=str(row["service"]),
        kind=str(row["intervention_kind"]),
        future_index=int(row["future_index"]),
        is_effect_step=bool(row["is_effect_step"]),
        target=row["target"],
        no_intervention=row.get("no_intervention"),
        prediction=row.get("parsed") if ok else None,
        parsed_ok=ok,
        answered=status in ("ok", "parse_error") and not late,
    )


@dataclass
class GroupFacts:
    """What the rows say about a group beyond its calls (fields of newer exports; an older
    export lacks them and reads as a main-set group of a model of unknown provider)."""

    provider: str | None = None
    reasoning: str | None = None
    """The reasoning mode the run's config requested for the model."""
    scenario_set: str = "main"
    scenario_source: str | None = None
    """"builtin", "core-v1" or "other" (None: an export from before the field)."""
    reasoning_tokens: int = 0
    late_answer_scenarios: list[str] = field(default_factory=list)
    """Scenarios whose chain has a step answered after later steps (scored as no prediction)."""


@dataclass
class Collected:
    groups: dict[GroupKey, list[GradedCall]] = field(default_factory=dict)
    facts: dict[GroupKey, GroupFacts] = field(default_factory=dict)
    prompt_versions: set[str] = field(default_factory=set)

    def add(self, row: dict[str, Any]) -> None:
        key = (str(row["model"]), str(row["benchmark"]), str(row["protocol"]))
        self.groups.setdefault(key, []).append(graded_from_row(row))
        facts = self.facts.get(key)
        if facts is None:
            facts = self.facts[key] = GroupFacts(
                provider=row.get("provider"),
                reasoning=row.get("reasoning"),
                scenario_set=str(row.get("scenario_set") or "main"),
                scenario_source=row.get("scenario_source"),
            )
        facts.reasoning_tokens += int((row.get("usage") or {}).get("reasoning_tokens") or 0)
        scenario = str(row["scenario_id"])
        if row.get("answered_after_later_steps") and scenario not in facts.late_answer_scenarios:
            facts.late_answer_scenarios.append(scenario)
        if row.get("prompt_version"):
            self.prompt_versions.add(str(row["prompt_version"]))


def is_cte_row(row: dict[str, Any]) -> bool:
    kind = row.get("benchmark_kind")
    return kind == "cte" if kind is not None else all(k in row for k in ORACLE_FIELDS)


def collect(path: Path) -> Collected:
    """The CTE rows of an export file (other benchmarks' rows are left out)."""
    out = Collected()
    for lineno, row in enumerate(read_export(path), 1):
        if not is_cte_row(row):
            continue
        try:
            out.add(row)
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: row {lineno}: malformed CTE row ({exc!r})") from None
    return out


def vm_by_index(calls: list[GradedCall]) -> list[tuple[int, float]]:
    """(future_index, value-match rate over scenarios) for each index, ascending."""
    hits: dict[int, list[int]] = {}
    for c in calls:
        hits.setdefault(c.future_index, []).append(int(value_match(c.prediction, c.target)))
    return [(i, sum(v) / len(v)) for i, v in sorted(hits.items())]
