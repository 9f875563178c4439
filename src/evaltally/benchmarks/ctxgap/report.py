"""CTXGAP report sections: tables (terminal and markdown) and the JSON document.

Accuracies are in percent with one decimal, differences in percentage points, every interval
`[low, high]` the 95% paired task-cluster bootstrap interval; "-" marks a value without a
defined denominator (no weighted task).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaltally.report.tables import Table, to_markdown

from .data import InvalidProbe
from .stats import POOLED_NOTE
from .units import OUTCOMES

REPORT_VERSION = 1


def _pct(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    # Adding 0.0 turns a rounded -0.0 (a difference of equal accuracies in floating point)
    # into 0.0, so an exact tie never prints as "-0.0".
    shown = round(100 * value, 1) + 0.0
    return f"{shown:+.1f}" if signed else f"{shown:.1f}"


def _ci(cell: Mapping[str, Any], *, signed: bool = False) -> str:
    text = _pct(cell["value"], signed=signed)
    if cell["value"] is not None and cell["ci_low"] is not None:
        text += f" [{_pct(cell['ci_low'], signed=signed)}, {_pct(cell['ci_high'], signed=signed)}]"
    return text


def _who(binding: Mapping[str, Any]) -> str:
    """The pairing a table is about; prefixed by the benchmark when a report has several."""
    who = f"observer {binding['observer_model']}, judge {binding['judge_model']}"
    return f"{binding['benchmark']}: {who}" if "benchmark" in binding else who


def view_table(binding: Mapping[str, Any]) -> Table:
    rows = []
    for a in binding["by_view"]:
        (v,) = a["views"]
        counts = a["outcomes"][v]
        rows.append(
            (
                v,
                str(a["n_probes"]),
                str(a["n_tasks"]),
                _ci(a["accuracy"][v]),
                _ci(a["pooled"][v]),
                _pct(a["scored_only"][v]),
                _pct(a["coverage"][v]),
                " / ".join(str(counts[o]) for o in OUTCOMES),
            )
        )
    return Table(
        f"Accuracy by view, % ({_who(binding)})",
        (
            "view",
            "probes",
            "tasks",
            "accuracy [95% CI]",
            "pooled [95% CI]",
            "scored-only",
            "coverage",
            "scored / empty / invalid verdict / failed / missing",
        ),
        rows,
        "Accuracy: importance-weighted, every task equal, intention-to-evaluate (unscored "
        "units count 0). Each view over the probes valid in it, with weights from those probes.",
    )


def gap_table(binding: Mapping[str, Any]) -> Table | None:
    gap = binding["gap"]
    if gap is None:
        return None
    u, t = gap["views"]
    (diff,) = gap["differences"]
    rows = [
        (f"A({u})", _ci(gap["accuracy"][u]), _ci(gap["pooled"][u])),
        (f"A({t})", _ci(gap["accuracy"][t]), _ci(gap["pooled"][t])),
        (
            f"gap A({t}) - A({u}), pp",
            _ci(diff, signed=True),
            _pct(diff["pooled_difference"], signed=True) + " (not the gap)",
        ),
    ]
    return Table(
        f"Information gap ({_who(binding)}): {gap['n_probes']} probes valid in both views, "
        f"{gap['n_tasks']} tasks",
        ("", "equal-task [95% CI]", "pooled [95% CI]"),
        rows,
        POOLED_NOTE,
    )


def _gap_rows(
    sections: Sequence[Mapping[str, Any]], key: str, weights: Mapping[str, Any]
) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for s in sections:
        u, t = s["accuracy"]
        (diff,) = s["differences"]
        extra: tuple[str, ...] = ()
        if key == "category":
            w = weights[s[key]]
            extra = (f"{w['weight']:.3f}", str(w["n_important_atoms"]))
        rows.append(
            (
                s[key],
                *extra,
                str(s["n_probes"]),
                str(s["n_tasks"]),
                _ci(s["accuracy"][u]),
                _ci(s["accuracy"][t]),
                _ci(diff, signed=True),
            )
        )
    return rows


def breakdown_tables(binding: Mapping[str, Any]) -> list[Table]:
    gap = binding["gap"]
    if gap is None:
        return []
    u, t = gap["views"]
    cols = ("probes", "tasks", f"A({u}) [95% CI]", f"A({t}) [95% CI]", "gap, pp [95% CI]")
    weights = {w["category"]: w for w in gap["weights"]}
    return [
        Table(
            f"By checkpoint, % ({_who(binding)})",
            ("checkpoint", *cols),
            _gap_rows(binding["by_checkpoint"], "checkpoint", weights),
        ),
        Table(
            f"By category, % ({_who(binding)})",
            ("category", "weight w_c", "important atoms", *cols),
            _gap_rows(binding["by_category"], "category", weights),
            "w_c = important atoms / probes of the category (importance >= 2 is important).",
        ),
    ]


def variants_table(binding: Mapping[str, Any]) -> Table | None:
    var = binding["variants"]
    if var is None:
        return None
    rows = [(v, _ci(var["accuracy"][v]), _ci(var["pooled"][v])) for v in var["views"]]
    rows += [
        (
            f"{d['to']} - {d['from']}, pp",
            _ci(d, signed=True),
            _pct(d["pooled_difference"], signed=True),
        )
        for d in var["differences"]
    ]
    return Table(
        f"Report variants ({_who(binding)}): {var['n_probes']} probes valid in all, identical "
        f"weights, {var['n_tasks']} tasks",
        ("", "equal-task [95% CI]", "pooled [95% CI]"),
        rows,
        "Differences are paired: the same probes, weights and bootstrap draws for every variant.",
    )


def invalid_table(invalid: Sequence[InvalidProbe], label: str | None = None) -> Table:
    rows = [(i.probe_id, i.view or "(all views)", i.reason) for i in invalid]
    title = f"Invalid probes, not scored ({len(rows)})"
    return Table(f"{label}: {title}" if label else title, ("probe", "view", "reason"), rows)


def observers_table(result: Mapping[str, Any], label: str | None = None) -> Table:
    """One row per (observer, judge) pairing and per observer's pooled judgments: each view's
    accuracy and the gap side by side."""
    entries = [*result["bindings"], *result.get("pooled", [])]
    views = list(dict.fromkeys(v for b in entries for v in b["views"]))
    rows = []
    for b in entries:
        accuracy = {a["views"][0]: a["accuracy"][a["views"][0]] for a in b["by_view"]}
        coverage = [a["coverage"][a["views"][0]] for a in b["by_view"]]
        gap = b["gap"]
        rows.append(
            (
                b["observer_model"],
                b["judge_model"],
                *(_ci(accuracy[v]) if v in accuracy else "-" for v in views),
                _ci(gap["differences"][0], signed=True) if gap else "-",
                _pct(min((c for c in coverage if c is not None), default=None)),
            )
        )
    gaps = {tuple(b["gap"]["views"]) for b in entries if b["gap"]}
    gap_name = "gap, pp" if len(gaps) != 1 else "gap A({1}) - A({0}), pp".format(*gaps.pop())
    title = "Observers side by side, %"
    return Table(
        f"{label}: {title}" if label else title,
        ("observer", "judge", *(f"A({v}) [95% CI]" for v in views), gap_name, "min coverage"),
        rows,
        "Each view over the probes valid in it; the gap over the probes valid in both views. "
        "A pooled row averages every judgment of the observer's units (all judge models and "
        "samples); its interval resamples tasks with all their judgments.",
        left=2,
    )


def tables(
    result: Mapping[str, Any], invalid: Sequence[InvalidProbe], label: str | None = None
) -> list[Table]:
    """The observers side by side, then every table of `result`'s bindings and pooled
    analyses; `label` names the benchmark in each title (for a report holding several CTXGAP
    benchmarks)."""
    out: list[Table] = [observers_table(result, label)]
    for binding in [*result["bindings"], *result.get("pooled", [])]:
        b = {**binding, "benchmark": label} if label else binding
        out.append(view_table(b))
        out += [t for t in (gap_table(b), variants_table(b)) if t is not None]
        out += breakdown_tables(b)
    out.append(invalid_table(invalid, label))
    return out


def document(
    result: Mapping[str, Any], invalid: Sequence[InvalidProbe], source: Mapping[str, Any]
) -> dict[str, Any]:
    """The JSON report: inputs (with their SHA-256), invalid probes and every statistic."""
    return {
        "report_version": REPORT_VERSION,
        "kind": "ctxgap",
        "source": dict(source),
        "invalid_probes": [
            {"probe_id": i.probe_id, "view": i.view, "reason": i.reason} for i in invalid
        ],
        **result,
    }


def markdown(made: Sequence[Table], result: Mapping[str, Any]) -> str:
    boot = result["bootstrap"]
    parts = [
        "# CTXGAP report",
        "",
        f"95% intervals from {boot['resamples']:,} paired task-cluster bootstrap resamples "
        f"(seed {boot['seed']}). Every planned unit is in the denominator: missing, failed and "
        "invalid-verdict units count 0. " + POOLED_NOTE,
        "",
    ]
    return "\n".join(parts + [to_markdown(t) for t in made])
