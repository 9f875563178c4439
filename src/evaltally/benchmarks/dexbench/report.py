"""DexBench report sections from a ``grade_rows`` result: tables (terminal and markdown through
``evaltally.report.tables``) and a PNG of the forward/backward/dual breakdown per source."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evaltally.report.figures import pyplot
from evaltally.report.tables import Table, pct

from .grade import SOURCE_ORDER


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
    """The paper's layout: dual pass@5, one row per model, one column per source."""
    sources = _sources(groups)
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for g in groups:
        cells.setdefault((g["benchmark"], g["model"]), {})[g["source"]] = _p(
            _get(g, "dual", "same_sample", "pass@5")
        )
    rows = [(b, m, *(row.get(s, "-") for s in sources)) for (b, m), row in cells.items()]
    return Table(
        "DexBench: dual pass@5 (%)",
        ("benchmark", "model", *sources),
        rows,
        "Dual = forward exact and backward success in the same sample (the release's reading); "
        "every planned instance counts, failed and unparsed answers score 0.",
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
    )  # fmt: skip


def tables(result: Mapping[str, Any]) -> list[Table]:
    groups = result["groups"]
    return [main_table(groups), task_table(groups), dual_table(groups), outcome_table(groups)]


def breakdown_plot(result: Mapping[str, Any], out: Path) -> Path:
    """One panel per source: forward exact, backward success and dual (pass@5, or pass@1 when
    fewer samples were planned), one bar group per model."""
    groups = result["groups"]
    sources = _sources(groups)
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
            ax.bar(xs, ys, width=width, label=f"{g['model']} ({k})")
        ax.set_title(source)
        ax.set_xticks(range(len(metrics)), [name for name, _ in metrics])
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("% of instances")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
