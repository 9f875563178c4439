"""Offline judges (`provider = "baseline"`): each names a step from `offline_context` alone —
the number of visible steps and, for episodes, their gold provenance — never from the text,
so what they choose, and the statistics that follow, are known in advance (docs/scae.md,
"Offline judges"):

- `last_gold`: the last visible gold-provenance step (the last visible step when none is
  visible): late by design, inside the class the full-trace judges of the paper favour;
- `first_gold`: the first visible gold-provenance step (step 1 when none is visible);
- `last_visible`: the last visible step, whatever it did (pure position).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from evaltally.benchmarks.base import Predictor


def _gold(context: Mapping[str, Any]) -> list[int]:
    """The visible steps (1-based) with gold provenance."""
    visible = int(context["visible"])
    return [s for s, (op, rev) in enumerate(context["provenance"][:visible], 1) if op or rev]


def last_gold(context: Mapping[str, Any]) -> int:
    gold = _gold(context)
    return gold[-1] if gold else int(context["visible"])


def first_gold(context: Mapping[str, Any]) -> int:
    gold = _gold(context)
    return gold[0] if gold else 1


def last_visible(context: Mapping[str, Any]) -> int:
    return int(context["visible"])


def _answer(name: str, choose: Callable[[Mapping[str, Any]], int]) -> Predictor:
    def answer(context: Mapping[str, Any]) -> str:
        step = choose(context)
        return orjson.dumps({"step": step, "reason": f"offline judge {name}"}).decode()

    return answer


OFFLINE_JUDGES: dict[str, Predictor] = {
    name: _answer(name, fn)
    for name, fn in (
        ("last_gold", last_gold),
        ("first_gold", first_gold),
        ("last_visible", last_visible),
    )
}
