"""The DexBench report section: ``DexGrader`` (the kind's grader) and, from a ``grade_rows``
result, the tables (terminal and markdown through ``evaltally.report.tables``) and a PNG of the
forward/backward/dual breakdown per source. ``tally report RUN`` and ``tally grade EXPORT``
both end here, with the same rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from evaltally.report.figures import pyplot
from evaltally.report.section import Figure, GradeSettings, Section
from evaltally.report.tables import Table, pct
from evaltally.sandbox.boundary import PROCESS

from .grade import SOURCE_ORDER, check_row, grade_rows

#: What grading reads of a row (``raw_text`` only of unparsed answers: their parse outcome).
_KEPT = ("call_id", "model", "benchmark", "item_id", "sample", "status", "task", "source",
         "parsed", "covered_lines", "verification")  # fmt: skip
FIGURE = "dexbench_breakdown.png"


class DexGrader:
    """Collects the DexBench rows of an export; every number comes from them alone."""

    legacy_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        check_row(row)
        kept = {k: row.get(k) for k in _KEPT}
        if row["status"] == "parse_error":
            kept["raw_text"] = row.get("raw_text")
        self.rows.append(kept)

    def section(self, settings: GradeSettings) -> Section:
        result = grade_rows(self.rows)
        intro = (
            "Intention to evaluate: every planned instance and sample is in every denominator; "
            "a failed or unfinished call, an unparsed answer and a backward answer without a "
            "passing verdict score 0. Forward is graded against the covered lines in the "
            "export; backward by the sandboxed verification's verdict. pass@1 reads sample 1, "
            "pass@5 the first five; `unbiased` is 1 - C(n-c,k)/C(n,k) over the n samples."
        )
        figure = Figure(
            FIGURE,
            "DexBench: forward, backward and dual per source",
            lambda out: breakdown_plot(result, out),
        )
        return Section(intro, tables(result), result, [figure])


def _p(value: float | None) -> str:
    return pct({"value": value})


def _get(group: Mapping[str, Any], *path: str) -> float | None:
    node: Any = group
    for key in path:
        if not isinstance(node, Mapping) or node.get(key) is None:
            return None
        node = node[key]
    return float(node)


def _sources(groups: Sequence[Mapping[str, Any]]) -> list[str]:
    present = {g["source"] for g in groups}
    return [s for s in SOURCE_ORDER if s in present] + sorted(present - set(SOURCE_ORDER))


def main_table(groups: Sequence[Mapping[str, Any]]) -> Table:
    """The paper's layout: dual pass@5, one row per model, one column per source (pass@1 when
    a benchmark planned fewer than 5 samples)."""
    sources = _sources(groups)
    k = "pass@5" if all((g["samples"] or 0) >= 5 for g in groups) else "pass@1"
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for g in groups:
        cells.setdefault((g["benchmark"], g["model"]), {})[g["source"]] = _p(
            _get(g, "dual", "same_sample", k)
        )
    rows = [(b, m, *(row.get(s, "-") for s in sources)) for (b, m), row in cells.items()]
    note = "" if k == "pass@5" else " Fewer than 5 samples were planned: pass@1 instead."
    return Table(
        f"DexBench: dual {k} (%)",
        ("benchmark", "model", *sources),
        rows,
        "Dual = forward exact and backward success in the same sample (the release's reading); "
        "every planned instance counts, failed and unparsed answers score 0." + note,
        left=2,
    )


def task_table(groups: Sequence[Mapping[str, Any]]) -> Table:
    rows = []
    for g in groups:
        rows.append(
            (
                g["benchmark"],
                g["model"],
                g["source"],
                str(g["instances"]),
                _p(_get(g, "forward", "pass@1")),
                _p(_get(g, "forward", "pass@5")),
                _p(_get(g, "forward", "jaccard@1")),
                _p(_get(g, "backward", "pass@1")),
                _p(_get(g, "backward", "pass@5")),
                _p(_get(g, "forward", "coverage")),
                _p(_get(g, "backward", "coverage")),
                _p(_get(g, "forward", "parse_failure_rate")),
                _p(_get(g, "backward", "parse_failure_rate")),
            )
        )
    return Table(
        "Forward and backward by model and source (%)",
        ("benchmark", "model", "source", "instances", "fwd exact@1", "fwd exact@5",
         "fwd Jaccard@1", "bwd@1", "bwd@5", "fwd coverage", "bwd coverage", "fwd parse fail",
         "bwd parse fail"),
        rows,
        "@1 = sample 1, @5 = any of the first 5; coverage = answered / planned calls.",
    )  # fmt: skip


def dual_table(groups: Sequence[Mapping[str, Any]]) -> Table:
    rows = []
    for g in groups:
        row = [g["benchmark"], g["model"], g["source"]]
        for reading in ("same_sample", "any_any", "unbiased"):
            row += [_p(_get(g, "dual", reading, "pass@1")), _p(_get(g, "dual", reading, "pass@5"))]
        rows.append(tuple(row))
    return Table(
        "Dual pass@k, three readings (%)",
        ("benchmark", "model", "source", "same@1", "same@5", "any-any@1", "any-any@5",
         "unbiased@1", "unbiased@5"),
        rows,
        "same = forward exact and backward success in one sample; any-any = some forward exact "
        "and some backward success among the first k; unbiased = 1 - C(n-c,k)/C(n,k).",
    )  # fmt: skip


def _counts(counts: Mapping[str, int] | None) -> str:
    return ", ".join(f"{k} {v}" for k, v in (counts or {}).items()) or "-"


def outcome_table(groups: Sequence[Mapping[str, Any]]) -> Table:
    rows = []
    for g in groups:
        for task in ("forward", "backward"):
            block = g.get(task)
            if not block:
                continue
            verification = block.get("verification", {})
            rows.append(
                (
                    g["benchmark"],
                    g["model"],
                    g["source"],
                    task,
                    _counts(block["statuses"]),
                    _counts(block["parse_outcomes"]),
                    _counts(verification.get("verdicts")),
                    _counts(verification.get("reasons")),
                )
            )
    return Table(
        "Outcomes: call statuses, parse failures, verification",
        ("benchmark", "model", "source", "task", "statuses", "parse outcomes", "verdicts",
         "verdict reasons"),
        rows,
        sandbox_note(groups),
        left=8,
    )  # fmt: skip


def sandbox_note(groups: Sequence[Mapping[str, Any]]) -> str:
    """Which sandbox the backward verdicts ran in; the weaker process-only mode is stated."""
    used: dict[str, int] = {}
    for g in groups:
        sandboxes = (g.get("backward") or {}).get("verification", {}).get("sandboxes") or {}
        for mode, n in sandboxes.items():
            used[mode] = used.get(mode, 0) + n
    weak = used.get(PROCESS, 0)
    if weak:
        return (
            f"WARNING: {weak} backward verdict(s) ran in the weaker process-only sandbox "
            '(sandbox = "process"): no kernel boundary around the programs they ran.'
        )
    if used:
        return (
            "Backward verdicts ran in the OS sandbox (bubblewrap namespaces, no key, no network)."
        )
    return ""


def _without_benchmark(table: Table) -> Table:
    return Table(
        table.title, table.header[1:], [r[1:] for r in table.rows], table.note, table.left - 1
    )


def tables(result: Mapping[str, Any]) -> list[Table]:
    """Every table; the `benchmark` column only when two DexBench benchmarks (two data sets,
    say) could otherwise be confused."""
    groups = result["groups"]
    out = [main_table(groups), task_table(groups), dual_table(groups), outcome_table(groups)]
    if len({g["benchmark"] for g in groups}) > 1:
        return out
    return [_without_benchmark(t) for t in out]


def breakdown_plot(result: Mapping[str, Any], out: Path) -> Path:
    """One panel per source: forward exact, backward success and dual (pass@5, or pass@1 when
    fewer samples were planned), one bar group per model."""
    groups = result["groups"]
    sources = _sources(groups)
    labelled = len({g["benchmark"] for g in groups}) > 1
    plt = pyplot()
    fig, axes = plt.subplots(
        1, max(1, len(sources)), figsize=(4.2 * max(1, len(sources)), 3.6), squeeze=False
    )
    metrics = (("forward", ("forward",)), ("backward", ("backward",)),
               ("dual", ("dual", "same_sample")))  # fmt: skip
    for ax, source in zip(axes[0], sources, strict=False):
        here = [g for g in groups if g["source"] == source]
        width = 0.8 / max(1, len(here))
        for i, g in enumerate(here):
            k = "pass@5" if (g["samples"] or 0) >= 5 else "pass@1"
            ys = [100 * (_get(g, *path, k) or 0.0) for _, path in metrics]
            xs = [m + (i - (len(here) - 1) / 2) * width for m in range(len(metrics))]
            who = f"{g['benchmark']}: {g['model']}" if labelled else g["model"]
            ax.bar(xs, ys, width=width, label=f"{who} ({k})")
        ax.set_title(source)
        ax.set_xticks(range(len(metrics)), [name for name, _ in metrics])
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("% of instances")
    handles, labels = axes[0][0].get_legend_handles_labels()
    # Below the panels, so no bar is hidden behind it.
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels) or 1), fontsize=7)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
