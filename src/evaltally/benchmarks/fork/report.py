"""The fork report section, from export rows alone: per fork (benchmark label x model), the
entropy of the answer at the fork step, the spread of the final outcome across replays and how
often a replay reproduces the recorded continuation (stats.py; docs/fork.md).

A replay is one chain of the fork run (its `sample` is the replay index); its steps are in
`step` order. The recorded continuation is read from each row's `recorded` field (the parent's
final answer at the same step). The outcome of a continuation is defined where the parent's
kind exports a `target` per step (CTE-Bench): the share of its steps whose answer is JSON-equal
to the target, for a continuation whose every step was answered; elsewhere it is undefined and
the number of distinct final answers stands for the outcome's spread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evaltally.benchmarks.cte.records import json_equal
from evaltally.report.section import GradeSettings, Section
from evaltally.report.tables import Table, number

from .stats import Continuation, ForkAnswer, fork_summary, parse_bucket_spec

_ANSWERED = ("ok", "parse_error")
_NO_TARGET = object()


@dataclass
class _Fork:
    info: dict[str, Any]
    replays: dict[int, dict[int, ForkAnswer]] = field(default_factory=dict)
    recorded: dict[int, ForkAnswer] = field(default_factory=dict)
    targets: dict[int, Any] = field(default_factory=dict)


def _answer(status: str, parsed: Any) -> ForkAnswer:
    return ForkAnswer(status, parsed if status == "ok" else None)


def _continuation(answers: Mapping[int, ForkAnswer], targets: Mapping[int, Any]) -> Continuation:
    steps = [answers[s] for s in sorted(answers)]
    outcome = None
    scored = all(t is not _NO_TARGET for t in targets.values())
    if scored and steps and all(a.status in _ANSWERED for a in steps):
        hits = [a.status == "ok" and json_equal(a.parsed, targets[s]) for s, a in answers.items()]
        outcome = sum(hits) / len(hits)
    return Continuation(tuple(steps), outcome)


class ForkGrader:
    legacy_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.forks: dict[tuple[str, str], _Fork] = {}

    def add(self, row: dict[str, Any]) -> None:
        key = (str(row["benchmark"]), str(row["model"]))
        fork = self.forks.setdefault(key, _Fork(dict(row["fork"])))
        step = int(row["step"])
        replay = fork.replays.setdefault(int(row["sample"]), {})
        if step in replay:
            raise ValueError(f"replay {row['sample']} has step {step} twice")
        replay[step] = _answer(str(row["status"]), row.get("parsed"))
        recorded = row["recorded"]
        fork.recorded[step] = (
            ForkAnswer("unfinished")
            if recorded is None
            else _answer(str(recorded["status"]), recorded.get("parsed"))
        )
        fork.targets[step] = row.get("target", _NO_TARGET)

    def section(self, settings: GradeSettings) -> Section:
        forks = []
        for (bench, model), f in sorted(self.forks.items()):
            spec = parse_bucket_spec(str(f.info["bucket"]))
            replays = [_continuation(f.replays[r], f.targets) for r in sorted(f.replays)]
            summary = fork_summary(_continuation(f.recorded, f.targets), replays, spec)
            forks.append({"benchmark": bench, "model": model, **f.info, "summary": summary})
        labels = [
            (f"{f['model']} / {f['benchmark']}: chain {f['parent_chain'][:12]} at step {f['at']}",
             f["summary"])
            for f in forks
        ]  # fmt: skip
        intro = (
            "Replays of a recorded chain from the fork step on, each continuing the parent's "
            "recorded prefix byte for byte (its requests were re-built and checked against the "
            "parent's request hashes before anything was sent). Entropy in nats over the "
            "buckets of the answer at the fork step; the outcome of a continuation is its share "
            "of value-matched steps where the parent's benchmark has targets (CTE-Bench)."
        )
        return Section(intro, [fork_table(labels)], {"forks": forks})


def fork_table(forks: Sequence[tuple[str, Mapping[str, Any]]]) -> Table:
    """One row per (label, `stats.fork_summary` result)."""
    rows = []
    for label, f in forks:
        o = f["outcome"]
        spread = "-" if o["min"] is None else f"{o['min']:g}..{o['max']:g}"
        rows.append(
            (
                label,
                str(f["replays"]),
                f["bucket_spec"],
                str(len(f["buckets"])),
                number(f["entropy"]),
                number(f["share_recorded_bucket"]),
                number(o["mean"]),
                number(o["variance"]),
                spread,
                str(f["final_distinct"]),
                number(f["share_reproduced"]),
            )
        )
    return Table(
        "Fork resampling",
        ("fork", "replays", "buckets by", "buckets", "entropy (nats)", "recorded bucket",
         "outcome mean", "outcome var", "outcome range", "final answers", "reproduced"),
        rows,
        "entropy of the answer at the fork step; recorded bucket: share of replays answering "
        "in the recorded answer's bucket; final answers: distinct last answers across replays; "
        "reproduced: share whose whole continuation equals the recorded one.",
        left=1,
    )  # fmt: skip
