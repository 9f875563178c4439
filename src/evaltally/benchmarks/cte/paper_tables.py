"""The paper's table layouts, from graded groups (one per model x benchmark x protocol).

- Table 1: non-model predictors, all-call VM / effect-step VM / all-call status match.
- Table 2: one row per model: effect-step VM under each protocol and answers-revealed all-call
  VM, each with the half-width of its 95% scenario-bootstrap interval.
- Table 3: free rollout: whole-trace exact match, median (and mean) first wrong call, VM over
  calls 1-10 and 21-40.
- Parse failures: one row per model, the parse-failure rate under each protocol (the paper
  discusses it for every model).
A model is a non-model predictor when the caller says so (from the run's config: a
`provider = "baseline"` entry); the export alone does not tell.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from evaltally.report.tables import Table, num, pct

PAPER_PROTOCOLS = ("answers_revealed", "no_feedback", "free_rollout")
_LABELS = {"answers_revealed": "answers revealed", "no_feedback": "no feedback",
           "free_rollout": "free rollout"}  # fmt: skip

Group = Mapping[str, Any]


def _by_model(groups: Sequence[Group]) -> dict[str, dict[str, Mapping[str, Any]]]:
    """model -> protocol -> metrics. A model label that runs two benchmarks of kind cte is
    shown as `model (benchmark)` so the two never merge into one row."""
    labels = {g["benchmark"] for g in groups}
    out: dict[str, dict[str, Mapping[str, Any]]] = {}
    for g in groups:
        name = g["model"] if len(labels) == 1 else f"{g['model']} ({g['benchmark']})"
        out.setdefault(name, {})[g["protocol"]] = g["summary"]["metrics"]
    return out


def table_1(groups: Sequence[Group], predictors: Collection[str]) -> Table | None:
    rows = []
    for g in groups:
        if g["model"] not in predictors or g["protocol"] != _first_protocol(groups, g["model"]):
            continue
        m = g["summary"]["metrics"]
        rows.append((g["model"], pct(m["all_call_vm"]), pct(m["effect_step_vm"]),
                     pct(m["status_match"])))  # fmt: skip
    if not rows:
        return None
    return Table(
        "Table 1: non-model predictors (%)",
        ("predictor", "all-call VM", "effect-step VM", "all-call SM"),
        rows,
        "Predictors ignore the history, so every protocol gives the same numbers; shown once.",
    )


def _first_protocol(groups: Sequence[Group], model: str) -> str:
    mine = [str(g["protocol"]) for g in groups if g["model"] == model]
    return min(mine, key=lambda p: (*PAPER_PROTOCOLS, p).index(p))


def table_2(groups: Sequence[Group], predictors: Collection[str] = ()) -> Table | None:
    rows = []
    for name, by in _by_model([g for g in groups if g["model"] not in predictors]).items():
        cells = [pct(by.get(p, {}).get("effect_step_vm"), interval=True) for p in PAPER_PROTOCOLS]
        ar_all = pct(by.get("answers_revealed", {}).get("all_call_vm"), interval=True)
        rows.append((name, *cells, ar_all))
    if not rows:
        return None
    header = tuple(f"{_LABELS[p]}: effect-step VM" for p in PAPER_PROTOCOLS)
    return Table(
        "Table 2: effect-step VM by protocol (%)",
        ("model", *header, "answers revealed: all-call VM"),
        rows,
        "± = half-width of the 95% scenario-bootstrap interval, not a standard deviation.",
    )


def table_3(groups: Sequence[Group], predictors: Collection[str] = ()) -> Table | None:
    rows = []
    for name, by in _by_model([g for g in groups if g["model"] not in predictors]).items():
        m = by.get("free_rollout")
        if m is None:
            continue
        rows.append((name, pct(m["whole_trace_exact"]), num(m["median_first_wrong"]),
                     num(m["mean_first_wrong"]), pct(m["vm_calls_1_10"]),
                     pct(m["vm_calls_21_40"])))  # fmt: skip
    if not rows:
        return None
    return Table(
        "Table 3: free rollout",
        ("model", "exact 40-step whole trace %", "median first wrong call",
         "mean first wrong call", "all-call VM, calls 1-10 %", "all-call VM, calls 21-40 %"),
        rows,
        "First wrong call counts from future call 1 and includes parse failures; fully correct "
        "scenarios are excluded from the median and mean only. The median of an even count is "
        "the mean of the two middle values.",
    )  # fmt: skip


def parse_failure_table(groups: Sequence[Group], predictors: Collection[str] = ()) -> Table | None:
    rows = []
    for name, by in _by_model([g for g in groups if g["model"] not in predictors]).items():
        rows.append(
            (name, *(pct(by.get(p, {}).get("parse_failure_rate")) for p in PAPER_PROTOCOLS))
        )
    if not rows:
        return None
    return Table(
        "Parse failures by protocol (% of planned calls)",
        ("model", *(_LABELS[p] for p in PAPER_PROTOCOLS)),
        rows,
        "A parse failure is scored wrong in every metric; its raw text is in the export.",
    )


def paper_tables(groups: Sequence[Group], predictors: Collection[str] = ()) -> list[Table]:
    """Tables 1-3 and the parse-failure table, those that have rows."""
    made = (
        table_1(groups, predictors),
        table_2(groups, predictors),
        table_3(groups, predictors),
        parse_failure_table(groups, predictors),
    )
    return [t for t in made if t is not None]
