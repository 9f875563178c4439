"""The `prompts` report section: what happened to every planned call, per model and benchmark,
and, for a benchmark with a scorer, its accuracy (benchmarks/prompts/scores.py).

Outcomes: how many calls were answered and parsed (`ok`), answered but unparsed, failed,
blocked or never finished, and the tokens reported. Scores are recomputed here from each row's
answer, target and scorer (never taken from the row's `score`), and the section counts the rows
whose exported `score` differs. A `benchmark` column appears when the report holds more than
one prompts benchmark.
"""

from __future__ import annotations

from typing import Any, ClassVar

from evaltally.benchmarks.prompts.scorers import score_row, verdict_score
from evaltally.benchmarks.prompts.scores import Scores, paired, summarise
from evaltally.errors import DataError
from evaltally.report.section import GradeSettings, Section
from evaltally.report.tables import Table, pct

STATUSES = ("ok", "parse_error", "failed", "blocked", "unfinished")


class PromptsGrader:
    legacy_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], dict[str, int]] = {}
        self.scores: dict[str, dict[str, Scores]] = {}
        """benchmark -> model -> scores"""
        self.differ = 0
        self.subjects: dict[str, str] = {}
        """chain id -> its subject model (the `model` scorer's verdicts belong to it)"""
        self.verdicts: list[tuple[str, str, str, str, int, float | None, dict[str, Any]]] = []

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
        if row.get("role", "subject") == "subject":
            self.subjects[str(row["chain_id"])] = str(row["model"])
        spec = row.get("scorer")
        if spec and spec["name"] == "model":
            value = verdict_score(row)
            self.differ += value != row.get("score")
            self.verdicts.append(
                (
                    str(row["chain_id"]),
                    str(row["benchmark"]),
                    str(row["model"]),
                    str(row["item_id"]),
                    int(row["sample"]),
                    value,
                    spec,
                )
            )
        elif spec:
            self._score(row, spec)

    def _score(self, row: dict[str, Any], spec: dict[str, Any]) -> None:
        item: dict[str, Any] = {
            "id": row["item_id"],
            **{k: row[k] for k in ("target", "choices", "meta") if k in row},
        }
        value = score_row(row, item, spec)
        self.differ += value != row.get("score")
        models = self.scores.setdefault(str(row["benchmark"]), {})
        models.setdefault(str(row["model"]), Scores(spec)).add(
            str(row["item_id"]), int(row["sample"]), value
        )

    def _graded(self) -> None:
        """Each verdict, scored for the subject model of its chain (a benchmark graded by two
        grader models is shown once per grader)."""
        graders: dict[str, set[str]] = {}
        for _, bench, grader, *_ in self.verdicts:
            graders.setdefault(bench, set()).add(grader)
        for chain, bench, grader, item, sample, value, spec in self.verdicts:
            label = bench if len(graders[bench]) == 1 else f"{bench} (grader {grader})"
            models = self.scores.setdefault(label, {})
            subject = self.subjects.get(chain)
            if subject is None:
                raise DataError(
                    f"the verdict of chain {chain} (benchmark {bench!r}) has no row of the "
                    "subject it grades in the export; grade the whole export"
                )
            models.setdefault(subject, Scores(spec)).add(item, sample, value)
        self.verdicts = []

    def section(self, settings: GradeSettings) -> Section:
        self._graded()
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
        if not self.scores:
            intro = (
                "No scorer was named, so these are the outcomes of every planned call; the "
                "answers themselves are in the export."
            )
            return Section(intro, [table], {"groups": groups})
        summaries = {
            bench: {m: summarise(s, settings) for m, s in sorted(models.items())}
            for bench, models in sorted(self.scores.items())
        }
        pairs = {bench: paired(models, settings) for bench, models in sorted(self.scores.items())}
        data = {
            "groups": groups,
            "scores": summaries,
            "paired": pairs,
            "scores_differing_from_export": self.differ,
            "bootstrap": {"resamples": settings.resamples, "seed": settings.seed},
        }
        intro = (
            "Accuracy under intention-to-evaluate counts every planned scored call (the last "
            "step of each chain), a call without an answer as 0; coverage is the share with a "
            "score; scored-only accuracy averages those. ± is the half-width of the "
            f"{settings.level:.0%} percentile bootstrap interval over items "
            f"({settings.resamples:,} resamples, seed {settings.seed}); paired differences draw "
            "the same items for both models. Scores were recomputed from each row's answer, "
            f"target and scorer; {self.differ:,} differ from the export's `score` column."
        )
        return Section(intro, [table, *_score_tables(summaries, pairs)], data)


def _score_tables(
    summaries: dict[str, dict[str, dict[str, Any]]], pairs: dict[str, list[dict[str, Any]]]
) -> list[Table]:
    keys = ("accuracy_ite", "coverage", "accuracy_scored")
    rows = []
    sample_rows = []
    for bench, models in summaries.items():
        for model, s in models.items():
            scorer = f"{s['scorer']['name']} v{s['scorer']['version']}"
            rows.append(
                (
                    model,
                    bench,
                    scorer,
                    f"{s['items']:,}",
                    f"{s['calls']:,}",
                    *(pct(s[k], interval=True) for k in keys),
                )
            )
            if s["over_samples"]:
                sample_rows.append(
                    (model, bench, *(pct(s["over_samples"][k], interval=True) for k in keys))
                )
    names = ("accuracy (ITE)", "coverage", "scored-only accuracy")
    tables = [
        Table(
            "Scores (%, ± 95% bootstrap over items)",
            ("model", "benchmark", "scorer", "items", "calls", *names),
            rows,
            "ITE: failed, blocked and unfinished calls count as wrong.",
        )
    ]
    if sample_rows:
        tables.append(
            Table(
                "Scores (%, ± 95% bootstrap over samples)",
                ("model", "benchmark", *names),
                sample_rows,
                left=2,
            )
        )
    pair_rows = [
        (p["a"], p["b"], bench, f"{p['items']:,}", pct(p, interval=True))
        for bench, ps in pairs.items()
        for p in ps
    ]
    if pair_rows:
        tables.append(
            Table(
                "Paired differences, A minus B (accuracy ITE, percentage points)",
                ("A", "B", "benchmark", "items", "difference"),
                pair_rows,
                "On the items both models were planned on; the interval draws the same items.",
            )
        )
    return tables
