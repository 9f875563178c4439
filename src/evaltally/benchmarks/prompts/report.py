"""The `prompts` report section: what happened to every planned call, per model and benchmark.

The generic benchmark has no reference answers, so its metrics are outcomes: how many calls
were answered and parsed (`ok`), answered but unparsed, failed, blocked or never finished,
and the tokens reported. A `benchmark` column appears when the report holds more than one
prompts benchmark.
"""

from __future__ import annotations

from typing import Any, ClassVar

from evaltally.report.section import GradeSettings, Section
from evaltally.report.tables import Table

STATUSES = ("ok", "parse_error", "failed", "blocked", "unfinished")


class PromptsGrader:
    legacy_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], dict[str, int]] = {}

    def add(self, row: dict[str, Any]) -> None:
        key = (str(row["model"]), str(row["benchmark"]))
        counts = self.groups.setdefault(
            key, dict.fromkeys((*STATUSES, "calls", "input_tokens", "output_tokens"), 0)
        )
        status = str(row["status"])
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}")
        counts[status] += 1
        counts["calls"] += 1
        usage = row.get("usage") or {}
        counts["input_tokens"] += int(usage.get("input_tokens") or 0)
        counts["output_tokens"] += int(usage.get("output_tokens") or 0)

    def section(self, settings: GradeSettings) -> Section:
        labelled = len({bench for _, bench in self.groups}) > 1
        rows = []
        for (model, bench), c in sorted(self.groups.items()):
            rows.append(
                (
                    *((model, bench) if labelled else (model,)),
                    f"{c['calls']:,}",
                    *(f"{100 * c[s] / c['calls']:.1f}" for s in STATUSES),
                    f"{c['input_tokens']:,}/{c['output_tokens']:,}",
                )
            )
        groups = [
            {"model": model, "benchmark": bench, **counts}
            for (model, bench), counts in sorted(self.groups.items())
        ]
        table = Table(
            "Outcomes (% of planned calls)",
            (
                *(("model", "benchmark") if labelled else ("model",)),
                "calls",
                *STATUSES,
                "tokens in/out",
            ),
            rows,
            "ok = answered and parsed; every planned call is counted.",
            left=2 if labelled else 1,
        )
        intro = (
            "The generic prompts benchmark has no reference answers: these are the outcomes "
            "of every planned call; the answers themselves are in the export."
        )
        return Section(intro, [table], {"groups": groups})
