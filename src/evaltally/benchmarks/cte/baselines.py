"""The three non-model controls of CTE-Bench (paper, Table 1), as pure predictors.

A predictor maps ``(scenario, future_index)`` to a predicted response (a JSON object).
"Observed" means the scenario's observed history (``trace_prefix``) only: none of these
predictors sees any future call's response. That is the reading that reproduces Table 1 on
Core-v1 (all-call VM / effect-step VM / status match, %):

- ``replay``: the no-intervention response of the same future call (75.7 / 0.0 / 91.6).
- ``copy_last``: the response of the last observed call, for every future call
  (1.5 / 1.1 / 72.3). Copying the previous *future* response instead gives 4.4 / 5.9 / 71.0,
  which does not match the paper.
- ``majority_status``: the most common status among observed responses, predicted as a
  sentinel object that carries only that status: ``{"error": {"code": "MAJORITY_STATUS"}}``
  when errors are the strict majority, otherwise ``{"status": "success"}`` (a tie predicts
  success). The sentinels never equal a real response, so VM is 0 by construction and only the
  status can match (0.0 / 0.0 / 76.8).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from .grade import GradedCall, graded_call
from .records import Scenario, is_error

Predictor = Callable[[Scenario, int], dict[str, Any]]

SUCCESS_SENTINEL: dict[str, Any] = {"status": "success"}
ERROR_SENTINEL: dict[str, Any] = {"error": {"code": "MAJORITY_STATUS"}}


def replay(scenario: Scenario, future_index: int) -> dict[str, Any]:
    """The response the unedited service gives to this future call."""
    return scenario.original[future_index].response


def copy_last(scenario: Scenario, future_index: int) -> dict[str, Any]:
    """The last observed response (the final call of the history), whatever the call."""
    if not scenario.prefix:
        return dict(SUCCESS_SENTINEL)
    return scenario.prefix[-1].response


def majority_status(scenario: Scenario, future_index: int) -> dict[str, Any]:
    """A status-only sentinel for the most common observed status (ties: success)."""
    errors = sum(is_error(c.response) for c in scenario.prefix)
    return dict(ERROR_SENTINEL) if errors * 2 > len(scenario.prefix) else dict(SUCCESS_SENTINEL)


PREDICTORS: dict[str, Predictor] = {
    "replay": replay,
    "copy_last": copy_last,
    "majority_status": majority_status,
}


def _offline(predict: Predictor) -> Callable[[Mapping[str, Any]], str]:
    def answer(context: Mapping[str, Any]) -> str:
        return orjson.dumps(predict(context["scenario"], int(context["future_index"]))).decode()

    return answer


OFFLINE_PREDICTORS = {name: _offline(fn) for name, fn in PREDICTORS.items()}
"""What `provider = "baseline"` runs: the answer text from `CteBenchmark.offline_context`."""


def graded_calls(scenarios: Sequence[Scenario], predictor: Predictor | str) -> list[GradedCall]:
    """Grade-ready records of ``predictor`` on every scored call of ``scenarios``."""
    fn = PREDICTORS[predictor] if isinstance(predictor, str) else predictor
    return [
        graded_call(s, i, fn(s, i), parsed_ok=True, answered=True)
        for s in scenarios
        for i in range(len(s.scored))
    ]
