"""The paper's table layouts and the probe sections, from graded groups.

A group is one (model, benchmark, protocol) with its `summary` and the facts its rows carry
(`provider`, `reasoning`, `scenario_set`, `reasoning_tokens`; see collect.py).

- Table 1: non-model predictors (`provider = "baseline"`), all-call VM / effect-step VM /
  all-call status match, once per predictor (they ignore the history: every protocol agrees).
- Table 2: one row per model: effect-step VM under each protocol and answers-revealed all-call
  VM, each with the half-width of its 95% scenario-bootstrap interval.
- Table 3: free rollout: whole-trace exact match, median and mean first wrong call, VM over
  calls 1-10 and 21-40.
- Parse failures: one row per model, the parse-failure rate under each protocol.
- Value-match readings: strict all-call and effect-step VM, each beside the release's
  `true == 1` reading, and how many predictions the two score differently.
Tables 1-3 carry the paper's numbers only on Core-v1: on any other scenario set (the built-in
generated one, say) their titles say which set they are computed on and that they are not the
paper's numbers (`scenario_source`, an export field).
- The no-effect probe and the reasoning-mode probe, each in its own table, never merged into
  the main ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from evaltally.report.tables import Table, num, pct

PAPER_PROTOCOLS = ("answers_revealed", "no_feedback", "free_rollout")
_LABELS = {"answers_revealed": "answers revealed", "no_feedback": "no feedback",
           "free_rollout": "free rollout"}  # fmt: skip
BASELINE = "baseline"

Group = Mapping[str, Any]


def who(g: Group, labelled: bool) -> tuple[str, ...]:
    return (g["model"], g["benchmark"]) if labelled else (g["model"],)


def cols(labelled: bool) -> tuple[str, ...]:
    return ("model", "benchmark") if labelled else ("model",)


def _per_model(groups: Sequence[Group]) -> Iterator[tuple[Group, dict[str, Mapping[str, Any]]]]:
    """(first group, protocol -> metrics) per (model, benchmark), in group order."""
    seen: dict[tuple[str, str], tuple[Group, dict[str, Mapping[str, Any]]]] = {}
    for g in groups:
        entry = seen.setdefault((g["model"], g["benchmark"]), (g, {}))
        entry[1][g["protocol"]] = g["summary"]["metrics"]
    yield from seen.values()


def _models(groups: Sequence[Group]) -> list[Group]:
    return [g for g in groups if g.get("provider") != BASELINE]


SOURCES = {"builtin": "the built-in generated scenario set", "other": "a non-Core-v1 scenario file"}


def paper_title(groups: Sequence[Group], number: int, what: str) -> str:
    """ "Table N: what" on Core-v1; elsewhere a title no reader takes for the paper's table."""
    found = {g.get("scenario_source") for g in groups}
    if found == {"core-v1"}:
        return f"Table {number} (Core-v1): {what}"
    if len(found) == 1 and None not in found:
        on = SOURCES.get(str(next(iter(found))), "another scenario set")
    else:
        on = "these scenarios (not identified as Core-v1)"
    layout = f"in the layout of the paper's Table {number} (not the paper's numbers)"
    return f"{what[0].upper()}{what[1:]} on {on}, {layout}"


def table_1(groups: Sequence[Group], labelled: bool) -> Table | None:
    rows = []
    shown = [g for g in groups if g.get("provider") == BASELINE]
    for g, by in _per_model(shown):
        m = next(by[p] for p in (*PAPER_PROTOCOLS, *by) if p in by)
        rows.append((*who(g, labelled), pct(m["all_call_vm"]), pct(m["effect_step_vm"]),
                     pct(m["status_match"])))  # fmt: skip
    if not rows:
        return None
    return Table(
        paper_title(shown, 1, "non-model predictors (%)"),
        (*cols(labelled), "all-call VM", "effect-step VM", "all-call SM"),
        rows,
        "Predictors ignore the history, so every protocol gives the same numbers; shown once.",
        left=1 + labelled,
    )


def table_2(groups: Sequence[Group], labelled: bool) -> Table | None:
    rows = []
    shown = _models(groups)
    for g, by in _per_model(shown):
        cells = [pct(by.get(p, {}).get("effect_step_vm"), interval=True) for p in PAPER_PROTOCOLS]
        ar_all = pct(by.get("answers_revealed", {}).get("all_call_vm"), interval=True)
        rows.append((*who(g, labelled), *cells, ar_all))
    if not rows:
        return None
    header = tuple(f"{_LABELS[p]}: effect-step VM" for p in PAPER_PROTOCOLS)
    return Table(
        paper_title(shown, 2, "effect-step VM by protocol (%)"),
        (*cols(labelled), *header, "answers revealed: all-call VM"),
        rows,
        "± = half-width of the 95% scenario-bootstrap interval, not a standard deviation.",
        left=1 + labelled,
    )


def table_3(groups: Sequence[Group], labelled: bool) -> Table | None:
    rows = []
    for g in groups:
        if g["protocol"] != "free_rollout":
            continue
        m = g["summary"]["metrics"]
        rows.append((*who(g, labelled), pct(m["whole_trace_exact"], interval=True),
                     num(m["median_first_wrong"]), num(m["mean_first_wrong"]),
                     pct(m["vm_calls_1_10"], interval=True),
                     pct(m["vm_calls_21_40"], interval=True)))  # fmt: skip
    if not rows:
        return None
    return Table(
        paper_title(groups, 3, "free rollout"),
        (*cols(labelled), "exact 40-step whole trace %", "median first wrong call",
         "mean first wrong call", "all-call VM, calls 1-10 %", "all-call VM, calls 21-40 %"),
        rows,
        "First wrong call counts from future call 1 and includes parse failures; fully correct "
        "scenarios are excluded from the median and mean only. The median of an even count is "
        "the mean of the two middle values.",
        left=1 + labelled,
    )  # fmt: skip


def parse_failure_table(groups: Sequence[Group], labelled: bool) -> Table | None:
    rows = []
    for g, by in _per_model(_models(groups)):
        rates = (pct(by.get(p, {}).get("parse_failure_rate")) for p in PAPER_PROTOCOLS)
        rows.append((*who(g, labelled), *rates))
    if not rows:
        return None
    return Table(
        "Parse failures by protocol (% of planned calls)",
        (*cols(labelled), *(_LABELS[p] for p in PAPER_PROTOCOLS)),
        rows,
        "A parse failure is scored wrong in every metric; its raw text is in the export.",
        left=1 + labelled,
    )


def readings_table(groups: Sequence[Group], labelled: bool) -> Table | None:
    rows = []
    for g in _models(groups):
        m = g["summary"]["metrics"]
        rows.append((*who(g, labelled), g["protocol"], pct(m["all_call_vm"]),
                     pct(m["all_call_vm_release"]), pct(m["effect_step_vm"]),
                     pct(m.get("effect_step_vm_release")),
                     f"{g['summary']['vm_reading_differs']:,}"))  # fmt: skip
    if not rows:
        return None
    return Table(
        "Value match: strict vs the release's reading (%)",
        (*cols(labelled), "protocol", "all-call VM", "all-call, release reading (true == 1)",
         "effect-step VM", "effect-step, release reading", "predictions scored differently"),
        rows,
        "VM is strict (true != 1); the release compares with Python equality. The count says "
        "whether the difference matters for a model.",
        left=2 + labelled,
    )  # fmt: skip


def _set(groups: Sequence[Group], name: str) -> list[Group]:
    return [g for g in groups if g.get("scenario_set") == name]


def no_effect_table(groups: Sequence[Group], labelled: bool) -> Table | None:
    rows = []
    for g in groups:
        m = g["summary"]["metrics"]
        rows.append((*who(g, labelled), g["protocol"], pct(m["all_call_vm"], interval=True),
                     pct(m["status_match"]), pct(m["parse_failure_rate"]),
                     f"{g['summary']['n_calls']:,}"))  # fmt: skip
    if not rows:
        return None
    return Table(
        "No-effect probe (%)",
        (*cols(labelled), "protocol", "no-effect VM", "status", "parse fail", "calls"),
        rows,
        "No scored response changes, so replay scores 100%: a miss is an invented change. "
        "Reported apart from the main tables (its scenarios are not Core-v1's).",
        left=2 + labelled,
    )


def reasoning_probe_table(groups: Sequence[Group], labelled: bool) -> Table | None:
    rows = [
        (*who(g, labelled), g.get("reasoning") or "-", g["protocol"],
         pct(g["summary"]["metrics"]["effect_step_vm"], interval=True),
         pct(g["summary"]["metrics"]["all_call_vm"], interval=True),
         pct(g["summary"]["metrics"]["parse_failure_rate"]), f"{g['reasoning_tokens']:,}")
        for g in sorted(groups, key=lambda g: (g["protocol"], g["model"]))
    ]  # fmt: skip
    if not rows:
        return None
    return Table(
        "Reasoning-mode probe (%)",
        (*cols(labelled), "reasoning requested", "protocol", "effect-step VM", "all-call VM",
         "parse fail", "reasoning tokens used"),
        rows,
        "The fixed 24-scenario subset, one row per model and protocol, side by side: the "
        "tokens column is the audit of what each setting actually used. Too small to rank "
        "reasoning modes in general.",
        left=3 + labelled,
    )  # fmt: skip


def paper_tables(groups: Sequence[Group], labelled: bool) -> list[Table]:
    """Tables 1-3, parse failures and value-match readings of main-set groups."""
    made = (
        table_1(groups, labelled),
        table_2(groups, labelled),
        table_3(groups, labelled),
        parse_failure_table(groups, labelled),
        readings_table(groups, labelled),
    )
    return [t for t in made if t is not None]


def probe_tables(groups: Sequence[Group], labelled: bool) -> list[Table]:
    made = (
        no_effect_table(
            [g for g in groups if g.get("scenario_set") == "no_effect_probe"], labelled
        ),
        reasoning_probe_table(
            [g for g in groups if g.get("scenario_set") == "reasoning_probe"], labelled
        ),
    )
    return [t for t in made if t is not None]
