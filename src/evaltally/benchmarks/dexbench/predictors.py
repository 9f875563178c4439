"""Offline DexBench predictors: answers computed from the instance, no model, no network.

Each predictor maps an offline context (``context(instance, task)``: plain data) to the text a
model would send, so its answers go through the same parser, verification and grading as a
hosted model's. ``PREDICTORS`` are the benchmark's (``provider = "baseline"``); expected scores
on the shipped instances (298 CRUXEval, 100 HumanEval):

- ``oracle``: forward the ground-truth covered lines -> exact 100% on every source; backward
  the instance's ``known_good_input`` (another upstream test input that reaches the target: 95
  of 100 HumanEval, no CRUXEval instance has one), else the unchanged input -> backward and
  dual 95% HumanEval, 0% CRUXEval.
- ``unchanged``: forward the ground truth; backward the instance's own input, which leaves the
  target uncovered by construction -> backward and dual 0% everywhere (the 8 HumanEval
  instances whose assertion is upstream's ``assert True`` have no input: an empty answer block,
  a parse error).
- ``no-answer``: prose without an answer block -> every call a parse error, 0% everywhere,
  with every planned instance in the denominator.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evaltally.benchmarks.base import Predictor
from evaltally.prompts.dexbench import ANSWER_CLOSE, ANSWER_OPEN

from .instances import Instance


def context(instance: Instance, task: str) -> dict[str, Any]:
    """What an offline predictor may read for one call (oracle data, never sent to a model)."""
    if task == "forward":
        return {"task": task, "covered_lines": list(instance.covered_lines)}
    return {"task": task, "input": instance.input, "known_good_input": instance.known_good_input}


def _block(text: str) -> str:
    return f"{ANSWER_OPEN}{text}{ANSWER_CLOSE}"


def oracle_forward(ctx: Mapping[str, Any]) -> str:
    return _block(json.dumps({"executed_lines": list(ctx["covered_lines"])}))


def unchanged_backward(ctx: Mapping[str, Any]) -> str:
    return _block(str(ctx["input"]))


def known_good_backward(ctx: Mapping[str, Any]) -> str:
    known = ctx.get("known_good_input")
    return _block(str(known)) if known is not None else unchanged_backward(ctx)


def no_answer(ctx: Mapping[str, Any]) -> str:
    return "I am not sure which lines run; it depends on the input."


def _by_task(forward: Predictor, backward: Predictor) -> Predictor:
    def predict(ctx: Mapping[str, Any]) -> str:
        return (forward if ctx["task"] == "forward" else backward)(ctx)

    return predict


#: The benchmark's offline predictors (``provider = "baseline"``, ``model = <name>``).
PREDICTORS: dict[str, Predictor] = {
    "oracle": _by_task(oracle_forward, known_good_backward),
    "unchanged": _by_task(oracle_forward, unchanged_backward),
    "no-answer": no_answer,
}
