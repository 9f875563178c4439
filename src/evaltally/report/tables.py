"""Report tables as plain data (header + rows of strings), rendered as markdown or rich.

Rates are shown in percent with one decimal; `± h` is the half-width of the 95% bootstrap
interval. Undefined values (empty denominators) show as "-".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table as RichTable
from rich.text import Text


@dataclass(frozen=True)
class Table:
    title: str
    header: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]
    note: str = ""


def pct(cell: Mapping[str, Any] | None, *, interval: bool = False) -> str:
    if not cell or cell.get("value") is None:
        return "-"
    text = f"{100 * cell['value']:.1f}"
    lo, hi = cell.get("ci_low"), cell.get("ci_high")
    if interval and lo is not None and hi is not None:
        text += f" ± {100 * (hi - lo) / 2:.1f}"
    return text


def _num(cell: Mapping[str, Any] | None) -> str:
    if not cell or cell.get("value") is None:
        return "-"
    return f"{cell['value']:.1f}"


def main_table(groups: Sequence[Mapping[str, Any]]) -> Table:
    rows = []
    for g in groups:
        m = g["summary"]["metrics"]
        rows.append(
            (
                g["model"],
                g["protocol"],
                pct(m["effect_step_vm"], interval=True),
                pct(m["all_call_vm"], interval=True),
                pct(m["status_match"]),
                pct(m["field_match"]),
                pct(m["parse_failure_rate"]),
                pct(m["coverage"]),
                f"{g['summary']['n_calls']:,}",
            )
        )
    return Table(
        "Headline (intention-to-evaluate, %)",
        ("model", "protocol", "effect-step VM", "all-call VM", "status", "field", "parse fail",
         "coverage", "calls"),
        rows,
        "VM = value match; ± = half-width of the 95% scenario-bootstrap interval.",
    )  # fmt: skip


def free_rollout_table(groups: Sequence[Mapping[str, Any]]) -> Table | None:
    rows = []
    for g in groups:
        if g["protocol"] != "free_rollout":
            continue
        m = g["summary"]["metrics"]
        rows.append(
            (
                g["model"],
                pct(m["whole_trace_exact"], interval=True),
                _num(m["median_first_wrong"]),
                pct(m["vm_calls_1_10"], interval=True),
                pct(m["vm_calls_21_40"], interval=True),
            )
        )
    if not rows:
        return None
    return Table(
        "Free rollout",
        ("model", "whole-trace exact %", "median first wrong call", "VM calls 1-10 %",
         "VM calls 21-40 %"),
        rows,
        "First wrong call is 1-based, over scenarios with a wrong call (parse failures count).",
    )  # fmt: skip


def breakdown_table(groups: Sequence[Mapping[str, Any]], key: str, label: str) -> Table:
    rows = []
    for g in groups:
        for name, sub in g["summary"].get(key, {}).items():
            m = sub["metrics"]
            rows.append(
                (
                    g["model"],
                    g["protocol"],
                    name,
                    str(sub["n_scenarios"]),
                    pct(m["effect_step_vm"], interval=True),
                    pct(m["all_call_vm"]),
                    pct(m["status_match"]),
                )
            )
    return Table(
        f"By {label} (%)",
        ("model", "protocol", label, "scenarios", "effect-step VM", "all-call VM", "status"),
        rows,
    )


def equal_service_table(groups: Sequence[Mapping[str, Any]]) -> Table:
    rows = []
    for g in groups:
        e = g["summary"]["equal_service"]
        rows.append(
            (
                g["model"],
                g["protocol"],
                pct(e["effect_step_vm"], interval=True),
                pct(e["all_call_vm"], interval=True),
                pct(e["status_match"]),
            )
        )
    return Table(
        "Equal-service view (unweighted mean over services, %)",
        ("model", "protocol", "effect-step VM", "all-call VM", "status"),
        rows,
        "Sensitivity view: each service weighs the same whatever its scenario count.",
    )


def all_tables(groups: Sequence[Mapping[str, Any]]) -> list[Table]:
    tables = [main_table(groups)]
    fr = free_rollout_table(groups)
    if fr is not None:
        tables.append(fr)
    tables += [
        breakdown_table(groups, "by_service", "service"),
        breakdown_table(groups, "by_kind", "intervention kind"),
        equal_service_table(groups),
    ]
    return tables


def to_markdown(table: Table) -> str:
    lines = [f"### {table.title}", "", "| " + " | ".join(table.header) + " |"]
    lines.append("|" + "|".join(" --- " for _ in table.header) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in table.rows]
    if table.note:
        lines += ["", table.note]
    return "\n".join(lines) + "\n"


def to_rich(table: Table) -> RichTable:
    """Cells are literal text: item ids and model keys are untrusted and never rich markup."""
    out = RichTable(title=Text(table.title), caption=Text(table.note) if table.note else None)
    for i, col in enumerate(table.header):
        out.add_column(Text(col), justify="left" if i < 3 else "right")
    for row in table.rows:
        out.add_row(*(Text(cell) for cell in row))
    return out
