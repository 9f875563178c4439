"""The terminal outcome Y of a CTE free rollout and the alternative actions of the
intervention branch (docs/scae.md, "The replay estimator").

Y is computed from the per-call hits of a whole trace (hit = value match with the executor's
true response; a parse failure is a miss), so it is bounded in [0, 1] as Theorem 1 needs:

- `share`: the share of value-matched calls (the default: it keeps the most variation, as the
  paper's recall outcome does);
- `final`: 1 when the last call is a value match, else 0;
- `exact`: 1 when every call is a value match (whole-trace exact match), else 0.

Alternatives at call i, defined from the scenario alone (never from a replay):

- `correct`: the executor's true response at i;
- `wrong`: a plausible wrong response: the response the service gives at i without the
  intervention when it differs (a model that ignores the intervention predicts exactly this),
  else the true response with its first scalar field (sorted key paths) perturbed: a number
  + 1, a boolean negated, a string with "?" appended, null as 0.

The intervention branch substitutes the alternative that flips the recorded action's
correctness: `correct` where the recorded answer was wrong, `wrong` where it was right.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evaltally.benchmarks.cte.records import Scenario, json_equal

OUTCOMES: dict[str, Callable[[Sequence[bool]], float]] = {
    "share": lambda hits: sum(hits) / len(hits),
    "final": lambda hits: float(hits[-1]),
    "exact": lambda hits: float(all(hits)),
}


def outcome(kind: str, hits: Sequence[bool]) -> float:
    return OUTCOMES[kind](hits)


def _perturbed(value: Any) -> tuple[Any, bool]:
    """`value` with its first scalar leaf changed, and whether there was one."""
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            new, done = _perturbed(value[key])
            if done:
                return {**value, key: new}, True
        return value, False
    if isinstance(value, list):
        for i, item in enumerate(value):
            new, done = _perturbed(item)
            if done:
                return [*value[:i], new, *value[i + 1 :]], True
        return value, False
    if isinstance(value, bool):
        return not value, True
    if isinstance(value, int | float):
        return value + 1, True
    if isinstance(value, str):
        return value + "?", True
    return 0, True


def plausible_wrong(scenario: Scenario, i: int) -> Any:
    target = scenario.scored[i].response
    base = scenario.original[i].response
    if not json_equal(base, target):
        return base
    new, done = _perturbed(target)
    return new if done else {"error": "unexpected"}


def alternative(scenario: Scenario, i: int, recorded_hit: bool) -> tuple[str, Any]:
    """(name, value) of the action substituted at call i (module docstring)."""
    if recorded_hit:
        return "wrong", plausible_wrong(scenario, i)
    return "correct", scenario.scored[i].response
