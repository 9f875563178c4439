"""The SCAE report section, from export rows alone (docs/scae.md, "Report").

Each row is one planned judge call; its judge status is re-read from the raw answer
(`parse.recorded_answer`, so `out_of_range` and `unparsable` stay apart) and it becomes a
`rows.JudgeRow`. Per benchmark (an episode file or a judged CTE run): every judge's positions,
displacement, sign test, enrichment, late bias and zero-LLM rules; Table 5 and the
heterogeneity tests when there are several judges; for CTE rollouts, the scores against the
certified first wrong call. Intervals use the report's bootstrap settings; the heterogeneity
test draws as many permutations as the bootstrap draws resamples.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evaltally.errors import DataError
from evaltally.report.section import GradeSettings, Section
from evaltally.report.tables import Table

from .conditions import PREFIX
from .cte_judge import REFERENCE_STATEMENT, score_judges
from .items import CTE_ROLLOUTS
from .parse import recorded_answer
from .provenance import StepProvenance
from .rows import JudgeRow
from .summary import summarize
from .tables import all_tables, cte_judge_table


def unit_id(episode_id: str, sample: int) -> str:
    """The statistics' unit: the episode, or (episode, sample) for samples after the first, so
    sample s of the full condition pairs with sample s of the prefix condition."""
    return episode_id if sample == 0 else f"{episode_id}#{sample}"


@dataclass
class _Benchmark:
    source: str
    rows: list[JudgeRow] = field(default_factory=list)
    reference: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] | None = None
    fractions: set[str] = field(default_factory=set)
    samples: int = 1


class ScaeGrader:
    legacy_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.benchmarks: dict[str, _Benchmark] = {}

    def add(self, row: dict[str, Any]) -> None:
        source = str(row["source"])
        b = self.benchmarks.setdefault(str(row["benchmark"]), _Benchmark(source))
        if b.source != source:
            raise ValueError(f"benchmark {row['benchmark']!r} mixes sources {b.source}, {source}")
        visible, sample = int(row["visible_steps"]), int(row["sample"])
        status, step = recorded_answer(str(row["status"]), row["raw_text"], visible)
        unit = unit_id(str(row["episode_id"]), sample)
        provenance = tuple(StepProvenance(bool(o), int(r)) for o, r in row["gold_provenance"])
        try:
            b.rows.append(
                JudgeRow(unit, str(row["model"]), str(row["condition"]), status, step,
                         int(row["total_steps"]), visible, provenance)
            )  # fmt: skip
        except DataError as exc:  # the report names the row
            raise ValueError(str(exc)) from None
        b.samples = max(b.samples, sample + 1)
        if row["condition"] == PREFIX:
            b.fractions.add(str(row["fraction"]))
        if source == CTE_ROLLOUTS:
            b.reference[unit] = int(row["first_wrong"])
            b.counts = dict(row["rollouts"])

    def section(self, settings: GradeSettings) -> Section:
        data: dict[str, Any] = {
            "settings": {
                "resamples": settings.resamples,
                "permutations": settings.resamples,
                "seed": settings.seed,
                "level": settings.level,
            },
            "benchmarks": {},
        }
        tables: list[Table] = []
        several = len(self.benchmarks) > 1
        for label, b in sorted(self.benchmarks.items()):
            entry, made = _grade(b, settings)
            data["benchmarks"][label] = entry
            tables += (
                [dataclasses.replace(t, title=f"{label}: {t.title}") for t in made]
                if several
                else made
            )
        return Section(_intro(self.benchmarks, settings), tables, data)


def _grade(b: _Benchmark, settings: GradeSettings) -> tuple[dict[str, Any], list[Table]]:
    seed, resamples = settings.seed, settings.resamples
    summary = summarize(b.rows, seed=seed, resamples=resamples, permutations=resamples)
    entry: dict[str, Any] = {
        "source": b.source,
        "prefix_fractions": sorted(b.fractions),
        "samples": b.samples,
        "summary": summary,
    }
    tables = all_tables(summary)
    if b.source == CTE_ROLLOUTS:
        scores = score_judges(b.rows, b.reference, seed=seed, resamples=resamples)
        entry["cte_judge"] = {
            "reference_counts": b.counts,
            "scores": scores,
            "reference": REFERENCE_STATEMENT,
        }
        tables.append(cte_judge_table(scores))
    return entry, tables


def _intro(benchmarks: dict[str, _Benchmark], settings: GradeSettings) -> str:
    fractions = sorted({f for b in benchmarks.values() for f in b.fractions})
    parts = [
        "Each judge named the one step it blames, once seeing the whole trajectory with its "
        "outcome (full) and once seeing only its first k = max(1, floor(f T)) steps with the "
        f"outcome withheld (prefix; f fixed in advance: {', '.join(fractions) or '-'}). "
        "pos = t/T; displacement = pos(full) - pos(prefix) over the episodes a judge answered "
        "in both conditions; the sign test is two-sided and exact, ties excluded. 95% intervals "
        f"from {settings.resamples:,} episode-bootstrap resamples (seed {settings.seed}); the "
        f"heterogeneity test permutes judge labels within episode {settings.resamples:,} times. "
        "Every planned call is counted under Judge answers."
    ]
    if any(b.samples > 1 for b in benchmarks.values()):
        parts.append(
            "With several samples per episode, each (episode, sample) is one unit: sample s of "
            "the full condition is paired with sample s of the prefix condition, and the "
            "intervals and tests treat the units as independent although samples of one "
            "episode share it."
        )
    if any(b.source == CTE_ROLLOUTS for b in benchmarks.values()):
        parts.append(REFERENCE_STATEMENT)
    return " ".join(parts)
