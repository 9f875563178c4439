"""The CTE-Bench report section: metrics per (model, benchmark, protocol), tables, figures.

Both `tally grade EXPORT` and `tally report RUN` end here through benchmarks/grading.py; the
section's `groups` is what the two commands must agree on exactly (docs/cte-protocols.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from evaltally.benchmarks.cte import plots, tables
from evaltally.benchmarks.cte.collect import ORACLE_FIELDS, Collected, vm_by_index
from evaltally.benchmarks.cte.grade import summarize
from evaltally.report.section import Figure, GradeSettings, Section

PROTOCOL_RANK = {"answers_revealed": 0, "no_feedback": 1, "free_rollout": 2}


class CteGrader:
    legacy_fields: ClassVar[tuple[str, ...]] = ORACLE_FIELDS

    def __init__(self) -> None:
        self.collected = Collected()

    def add(self, row: dict[str, Any]) -> None:
        self.collected.add(row)

    def section(self, settings: GradeSettings) -> Section:
        found = self.collected.groups
        keys = sorted(found, key=lambda k: (k[0], k[1], PROTOCOL_RANK.get(k[2], 9), k[2]))
        groups: list[dict[str, Any]] = [
            {
                "model": model,
                "benchmark": bench,
                "protocol": protocol,
                "summary": summarize(
                    found[(model, bench, protocol)],
                    seed=settings.seed,
                    resamples=settings.resamples,
                    level=settings.level,
                ),
                "vm_by_index": vm_by_index(found[(model, bench, protocol)]),
                **dataclasses.asdict(self.collected.facts[(model, bench, protocol)]),
            }
            for model, bench, protocol in keys
        ]
        versions = sorted(self.collected.prompt_versions)
        data: dict[str, Any] = {
            "prompt_versions": versions,
            "bootstrap": {
                "resamples": settings.resamples,
                "seed": settings.seed,
                "level": settings.level,
            },
            "groups": groups,
        }
        intro = (
            f"Prompt version(s): {', '.join(versions) or '-'}; 95% intervals from "
            f"{settings.resamples:,} scenario-bootstrap resamples (seed {settings.seed}). "
            "Every planned call is in the denominator: failed, blocked, unfinished and "
            "unparsed calls count wrong."
        ) + late_answer_note(groups)
        figures = [
            Figure(
                "vm_by_index.png",
                "VM by future call",
                lambda out: plots.vm_by_index(groups, out),
            ),
            Figure(
                "effect_step_vm.png",
                "Effect-step VM",
                lambda out: plots.effect_vm_intervals(groups, out),
            ),
        ]
        return Section(intro, tables.all_tables(groups), data, figures)


def late_answer_note(groups: list[dict[str, Any]]) -> str:
    """Names the chains with a step answered after later steps were sent without it."""
    flagged = [
        f"{g['model']} {g['protocol']}: {', '.join(g['late_answer_scenarios'])}"
        for g in groups
        if g.get("late_answer_scenarios")
    ]
    if not flagged:
        return ""
    return (
        " Chains with a step answered (on resume) after its later steps were sent without it; "
        "that step scores as no prediction, as the release scores it: " + "; ".join(flagged) + "."
    )
