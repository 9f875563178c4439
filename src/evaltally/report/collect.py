"""Export rows -> `GradedCall` groups, one group per (model, benchmark, protocol).

Intention-to-evaluate: every planned call is a row of the export; a row whose status is not
`ok` has no prediction and counts wrong (`failed`, `blocked`, `unfinished`: not answered;
`parse_error`: answered, unparsed). Only rows carrying the CTE oracle fields are graded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaltally.benchmarks.cte.grade import GradedCall
from evaltally.errors import DataError
from evaltally.ledger.export_formats import read_export

ORACLE_FIELDS = ("scenario_id", "service", "intervention_kind", "future_index", "target")
GroupKey = tuple[str, str, str]
"""(model, benchmark label, protocol)."""


@dataclass
class Collected:
    groups: dict[GroupKey, list[GradedCall]] = field(default_factory=dict)
    reasoning_tokens: dict[str, int] = field(default_factory=dict)
    prompt_versions: set[str] = field(default_factory=set)
    skipped_rows: int = 0


def read_rows(path: Path) -> Iterator[dict[str, Any]]:
    return read_export(path)


def graded_from_row(row: dict[str, Any]) -> GradedCall:
    status = row.get("status")
    ok = status == "ok"
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
        answered=status in ("ok", "parse_error"),
    )


def collect(path: Path) -> Collected:
    out = Collected()
    for lineno, row in enumerate(read_rows(path), 1):
        if not all(k in row for k in ORACLE_FIELDS):
            out.skipped_rows += 1  # another benchmark's row: not CTE, not graded here
            continue
        try:
            key = (str(row["model"]), str(row["benchmark"]), str(row["protocol"]))
            out.groups.setdefault(key, []).append(graded_from_row(row))
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: row {lineno}: malformed CTE row ({exc!r})") from None
        usage = row.get("usage") or {}
        reasoning = int(usage.get("reasoning_tokens") or 0)
        out.reasoning_tokens[key[0]] = out.reasoning_tokens.get(key[0], 0) + reasoning
        if row.get("prompt_version"):
            out.prompt_versions.add(str(row["prompt_version"]))
    return out


def vm_by_index(calls: list[GradedCall]) -> list[tuple[int, float]]:
    """(future_index, value-match rate over scenarios) for each index, ascending."""
    from evaltally.benchmarks.cte.grade import value_match

    hits: dict[int, list[int]] = {}
    for c in calls:
        hits.setdefault(c.future_index, []).append(int(value_match(c.prediction, c.target)))
    return [(i, sum(v) / len(v)) for i, v in sorted(hits.items())]
