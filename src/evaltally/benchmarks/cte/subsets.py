"""Named scenario subsets of a CTE scenario file, and what set a benchmark's scenarios form.

The reasoning-mode probe is the paper's small fixed subset run with reasoning on and off
(24 scenarios there; its selection is not published). Ours is a rule anyone can re-apply to any
scenario file: per service, the scenarios in ascending `item_id` order, 4 per service, spread over
the service's intervention cells (the rate limiter's four cells give one each).
"""

from __future__ import annotations

from collections.abc import Sequence

from .records import Scenario

REASONING_PROBE = "reasoning-probe"
SUBSETS = (REASONING_PROBE,)
PER_SERVICE = 4


def reasoning_probe(scenarios: Sequence[Scenario]) -> list[Scenario]:
    """4 scenarios per service, round-robin over its (kind) cells, lowest item ids first."""
    cells: dict[str, dict[str, list[Scenario]]] = {}
    for s in sorted(scenarios, key=lambda s: s.item_id):
        cells.setdefault(s.domain, {}).setdefault(s.kind, []).append(s)
    picked: list[Scenario] = []
    for domain in sorted(cells):
        queues = [cells[domain][kind] for kind in sorted(cells[domain])]
        taken = 0
        while taken < PER_SERVICE and any(queues):
            for queue in queues:
                if queue and taken < PER_SERVICE:
                    picked.append(queue.pop(0))
                    taken += 1
    keep = {s.item_id for s in picked}
    return [s for s in scenarios if s.item_id in keep]


def scenario_set(subset: str | None, scenarios: Sequence[Scenario]) -> str:
    """The export's `scenario_set`: which kind of set the report should treat these as."""
    if subset == REASONING_PROBE:
        return "reasoning_probe"
    if not any(s.effect_steps() for s in scenarios):
        return "no_effect_probe"
    return "main"
