"""What the command line prints about batch mode: the plan's rounds and batches, the rounds
table of `tally status`, and the rounds summary at the end of `tally run` / `tally resume`.
Model keys are untrusted text: rich markup is off wherever they are printed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from evaltally.plan.batches import BatchPlan


def plan_lines(plans: Sequence[BatchPlan]) -> list[str]:
    lines = []
    for p in plans:
        per_batch = f"{p.max_requests:,} requests" if p.max_requests < 10**9 else "no request cap"
        lines.append(
            f"batch mode: {p.model}: {p.requests:,} requests in {p.rounds:,} rounds "
            f"({p.first_round:,} in round 1, about {_mb(p.first_round_bytes)}), "
            f"about {p.batches:,} batches "
            f"(per batch: {per_batch}, {p.max_bytes / 1e6:,.0f} MB); cost at the batch price"
        )
    return lines


def _mb(size: int) -> str:
    mb = size / 1e6
    return f"{mb:,.1f} MB" if mb < 10 else f"{mb:,.0f} MB"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def rounds_table(rounds: Sequence[Mapping[str, Any]]) -> Table:
    table = Table(title="batch rounds")
    for col in ("model", "round", "batches", "requests", "answered", "wall time", "state"):
        table.add_column(col)
    for r in rounds:
        table.add_row(
            str(r["model"]),
            str(r["round"]),
            str(r["batches"]),
            f"{r['requests']:,}",
            f"{r['answered_share']:.0%}",
            _duration(r["wall_s"]),
            "open" if r["open"] else "closed",
        )
    return table


def batches_line(batches: Sequence[Mapping[str, Any]]) -> str:
    states: dict[str, int] = {}
    for b in batches:
        key = "open" if not b["closed"] else str(b["state"])
        states[key] = states.get(key, 0) + 1
    parts = ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
    return f"batches: {len(batches)} ({parts})"


def rounds_summary(rounds: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per batch-mode model: rounds, requests, share answered, wall time."""
    by_model: dict[str, list[Mapping[str, Any]]] = {}
    for r in rounds:
        by_model.setdefault(str(r["model"]), []).append(r)
    lines = []
    for model, rows in by_model.items():
        requests = sum(r["requests"] for r in rows)
        answered = sum(r["answered"] for r in rows)
        wall = sum(r["wall_s"] for r in rows)
        slowest = max(rows, key=lambda r: r["wall_s"])
        lines.append(
            f"  {model}: {len(rows)} rounds, {sum(r['batches'] for r in rows)} batches, "
            f"{requests:,} requests, {answered / requests if requests else 0:.0%} answered, "
            f"{_duration(wall)} in rounds (slowest: round {slowest['round']}, "
            f"{_duration(slowest['wall_s'])}); per round: `tally status RUN`"
        )
    return lines
