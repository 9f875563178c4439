"""``tally cte stats``: the composition of a scenario file.

Per service x intervention kind: scenarios, scored calls (first ``SCORED_CALLS`` future calls),
effect steps inside the scored window, and "late" scenarios whose first changed response comes
after the scored window. On Core-v1: 255 scenarios, 10,200 scored calls, 2,476 effect steps,
8 late scenarios.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaltally.errors import DataError

from .records import Scenario, load_scenarios


def resolve_data(data: str | Path) -> Path:
    """``"builtin"`` -> the generated built-in set (provided by ``generate.builtin_path``)."""
    if str(data) != "builtin":
        return Path(data)
    try:  # lazy: the generator module is optional at import time of this one
        generate = importlib.import_module("evaltally.benchmarks.cte.generate")
    except ImportError as exc:
        raise DataError(
            f"the built-in scenario set is unavailable ({exc}); pass a DATA path"
        ) from exc
    return Path(generate.builtin_path())


def composition(scenarios: Sequence[Scenario]) -> dict[str, Any]:
    """Totals and the per (service, kind) breakdown, JSON-ready."""
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for s in scenarios:
        key = (s.domain, s.kind)
        cell = cells.setdefault(
            key,
            {
                "service": s.domain,
                "kind": s.kind,
                "scenarios": 0,
                "scored_calls": 0,
                "effect_steps": 0,
                "late_first_change": 0,
            },
        )
        cell["scenarios"] += 1
        cell["scored_calls"] += len(s.scored)
        cell["effect_steps"] += len(s.effect_steps())
        cell["late_first_change"] += int(s.is_late())
    by = [cells[k] for k in sorted(cells)]
    return {
        "scenarios": len(scenarios),
        "scored_calls": sum(c["scored_calls"] for c in by),
        "effect_steps": sum(c["effect_steps"] for c in by),
        "late_first_change": sum(c["late_first_change"] for c in by),
        "by": by,
    }


def file_stats(data: str | Path = "builtin") -> dict[str, Any]:
    """Composition of the file at ``data`` (or the built-in set)."""
    return composition(load_scenarios(resolve_data(data)))


def render_table(stats: dict[str, Any], title: str = "") -> Any:
    """A rich Table of the composition (import kept local: rich is only needed for display)."""
    from rich.table import Table

    table = Table(title=title or None)
    for col in ("service", "kind", "scenarios", "scored calls", "effect steps", "late"):
        left = col in ("service", "kind")
        table.add_column(col, justify="left" if left else "right", no_wrap=True)
    for c in stats["by"]:
        table.add_row(
            c["service"],
            c["kind"],
            f"{c['scenarios']:,}",
            f"{c['scored_calls']:,}",
            f"{c['effect_steps']:,}",
            f"{c['late_first_change']:,}",
        )
    table.add_section()
    table.add_row(
        "total",
        "",
        f"{stats['scenarios']:,}",
        f"{stats['scored_calls']:,}",
        f"{stats['effect_steps']:,}",
        f"{stats['late_first_change']:,}",
    )
    return table
