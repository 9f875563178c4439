"""Offline predictors through parse, sandboxed verification and grading, on every shipped
instance: their scores are the ones the module states."""

from __future__ import annotations

import asyncio
from typing import Any

from evaltally.benchmarks.dexbench.coverage import new_pool
from evaltally.benchmarks.dexbench.grade import grade_rows
from evaltally.benchmarks.dexbench.instances import Instance, load_builtin, oracle_fields
from evaltally.benchmarks.dexbench.parse import parse_backward, parse_forward
from evaltally.benchmarks.dexbench.predictors import PREDICTORS, Predictor, context
from evaltally.benchmarks.dexbench.verify import verify_backward
from evaltally.sandbox import TaskPool


async def _row(pool: TaskPool, model: str, i: Instance, task: str, predict: Predictor) -> Any:
    text = predict(context(i, task))
    parsed = (parse_forward if task == "forward" else parse_backward)(text)
    row = {
        "model": model, "benchmark": "dexbench", "item_id": i.id, "sample": 0,
        "status": "ok" if parsed.ok else "parse_error", "parsed": parsed.value,
        "raw_text": text, **oracle_fields(i, task),
    }  # fmt: skip
    if task == "backward" and parsed.ok:
        verdict = await verify_backward(i, parsed.value["input"], pool=pool)
        row["verification"] = verdict.as_dict()
    return row


async def _rows(model: str, instances: list[Instance]) -> list[Any]:
    forward, backward = PREDICTORS[model]
    async with new_pool() as pool:
        jobs = [_row(pool, model, i, "forward", forward) for i in instances]
        jobs += [_row(pool, model, i, "backward", backward) for i in instances]
        return list(await asyncio.gather(*jobs))


def _by_source(result: dict[str, Any]) -> dict[str, Any]:
    return {g["source"]: g for g in result["groups"]}


async def test_the_oracle_scores_forward_100_and_backward_where_a_known_good_input_exists() -> None:
    instances = load_builtin()
    groups = _by_source(grade_rows(await _rows("oracle", instances)))
    assert {s: g["instances"] for s, g in groups.items()} == {"cruxeval": 298, "humaneval": 100}
    for g in groups.values():
        assert g["forward"]["pass@1"] == 1.0 and g["forward"]["jaccard@1"] == 1.0
        assert g["forward"]["coverage"] == 1.0 and g["forward"]["parse_failure_rate"] == 0.0
    assert groups["cruxeval"]["backward"]["pass@1"] == 0.0
    assert groups["humaneval"]["backward"]["pass@1"] == 0.95
    assert groups["humaneval"]["dual"]["same_sample"]["pass@1"] == 0.95
    assert groups["humaneval"]["backward"]["verification"]["verdicts"] == {
        "failed": 5,
        "passed": 95,
    }


async def test_the_unchanged_input_never_reaches_the_target() -> None:
    instances = [i for i in load_builtin() if i.source == "humaneval"]
    [g] = grade_rows(await _rows("unchanged", instances))["groups"]
    assert g["forward"]["pass@1"] == 1.0
    assert g["backward"]["pass@1"] == 0.0 and g["dual"]["same_sample"]["pass@1"] == 0.0
    assert g["backward"]["verification"]["reasons"] == {"not_reached": 92}
    # 8 chosen assertions are upstream's `assert True`: no input, an empty answer block
    assert g["backward"]["parse_outcomes"] == {"empty_answer": 8}


async def test_an_answer_without_a_block_scores_zero_with_every_instance_planned() -> None:
    groups = _by_source(grade_rows(await _rows("no-answer", load_builtin())))
    assert {s: g["instances"] for s, g in groups.items()} == {"cruxeval": 298, "humaneval": 100}
    for g in groups.values():
        for task in ("forward", "backward"):
            assert g[task]["pass@1"] == 0.0 and g[task]["parse_failure_rate"] == 1.0
            assert set(g[task]["parse_outcomes"]) == {"no_answer_block"}
        assert g["dual"]["any_any"]["pass@1"] == 0.0
