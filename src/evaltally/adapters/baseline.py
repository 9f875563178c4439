"""Offline baseline predictors as adapters, so they run through the same lanes and ledger.

`provider = "baseline"` with `model` one of the registered predictors. The benchmark's
`offline_context` supplies what a predictor reads (for CTE: the scenario and the future call's
index); nothing is sent anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from evaltally.adapters.base import OfflineAdapter
from evaltally.errors import EvaltallyError
from evaltally.records import Completion, Message, Usage


class UnknownBaselineError(EvaltallyError):
    """The config names a baseline predictor that does not exist."""


class CtePredictorAdapter:
    """Answers a CTE call with one of the paper's non-model controls."""

    def __init__(self, name: str) -> None:
        from evaltally.benchmarks.cte.baselines import PREDICTORS

        self.name = name
        self.predict = PREDICTORS[name]

    def answer(self, messages: Sequence[Message], context: Mapping[str, Any]) -> Completion:
        if "scenario" not in context:
            raise UnknownBaselineError(
                f"baseline {self.name!r} predicts CTE-Bench calls only; "
                "use it with a [[benchmarks]] entry of kind 'cte'"
            )
        prediction = self.predict(context["scenario"], int(context["future_index"]))
        return Completion(
            text=orjson.dumps(prediction).decode(), finish_reason="stop", usage=Usage()
        )


def baseline_names() -> list[str]:
    from evaltally.benchmarks.cte.baselines import PREDICTORS

    return sorted(PREDICTORS)


def baseline_adapter(name: str) -> OfflineAdapter:
    if name not in baseline_names():
        raise UnknownBaselineError(
            f"unknown baseline predictor {name!r}; valid: {', '.join(baseline_names())}"
        )
    return CtePredictorAdapter(name)
