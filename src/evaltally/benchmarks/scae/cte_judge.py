"""Judges scored against execution-certified blame: CTE free rollouts (docs/scae.md).

In a CTE-Bench free rollout a model predicts 40 service responses in a row, each prompt
carrying its own earlier predictions; the executor's true responses are known. The certified
first wrong call of a chain is the 1-based position of its first call that is not a value
match (`cte.grade.value_match`; a parse failure or a missing answer is wrong) — the same rule
as CTE's `median first wrong call`.

A judge is shown the rollout as a trajectory (step = the call `op(args)` and the model's
predicted response) under the two SCAE conditions, with rubric `first-wrong-v1`, and its
choice t is scored against the certified call c: exact hit (t = c), signed distance t - c,
hit within one step (|t - c| <= 1), and the displacement between conditions (`stats`).

Only chains where every call was answered (`ok` or `parse_error`) and at least one call is
wrong are judged: a chain cut short by transport failures has no model-made trace to blame,
and an all-correct chain has nothing to blame.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaltally.benchmarks.cte.benchmark import intervention_data
from evaltally.benchmarks.cte.grade import value_match
from evaltally.benchmarks.cte.records import Scenario
from evaltally.errors import DataError
from evaltally.prompts import cte as cte_prompts

from .conditions import CONDITIONS, JudgeStep, Trajectory
from .rows import JudgeRow, pairs
from .stats import displacement

FIRST_WRONG_RUBRIC = "first-wrong-v1"
ROW_FIELDS = ("model", "benchmark", "chain_id", "scenario_id", "future_index", "status", "target")
ANSWERED = ("ok", "parse_error")

#: What the reference is and is not, printed with every CTE-judge table (docs/scae.md).
REFERENCE_STATEMENT = (
    "The reference is certified by execution: the first call whose predicted response differs "
    "from the service's true response, with no estimate, annotator or causal model involved. "
    "It is not the step most responsible for the outcome (later errors may be independent "
    "mistakes) and not a causal attribution (nothing was intervened on): it measures whether "
    "a judge localizes the first error of a trace, which also requires simulating the service."
)


@dataclass(frozen=True, slots=True)
class RolloutCall:
    status: str
    prediction: Any
    """The parsed answer when `status` is `ok`, else None."""
    target: Any

    @property
    def correct(self) -> bool:
        return self.status == "ok" and value_match(self.prediction, self.target)


@dataclass(frozen=True)
class Rollout:
    """One free-rollout chain of an export, calls in future_index order."""

    model: str
    benchmark: str
    chain_id: str
    scenario_id: str
    calls: tuple[RolloutCall, ...]

    @property
    def first_wrong(self) -> int | None:
        """The certified first wrong call, 1-based; None when every call is a value match."""
        return next((i for i, c in enumerate(self.calls, 1) if not c.correct), None)

    @property
    def complete(self) -> bool:
        return all(c.status in ANSWERED for c in self.calls)

    @property
    def judgeable(self) -> bool:
        return self.complete and self.first_wrong is not None


def rollouts(rows: Iterable[Mapping[str, Any]]) -> list[Rollout]:
    """The free-rollout chains of CTE export rows (other rows are ignored), by chain id."""
    chains: dict[str, dict[int, tuple[Mapping[str, Any], RolloutCall]]] = {}
    for n, row in enumerate(rows, 1):
        if row.get("protocol") != "free_rollout" or "future_index" not in row:
            continue
        missing = [k for k in ROW_FIELDS if k not in row]
        if missing:
            raise DataError(f"export row {n}: free-rollout row without field {missing[0]}")
        index = row["future_index"]
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise DataError(f"export row {n}: future_index must be an integer >= 0")
        ok = row["status"] == "ok"
        call = RolloutCall(str(row["status"]), row.get("parsed") if ok else None, row["target"])
        chain = chains.setdefault(str(row["chain_id"]), {})
        if index in chain:
            raise DataError(f"export row {n}: chain {row['chain_id']} repeats call {index}")
        chain[index] = (row, call)
    return [_rollout(cid, chains[cid]) for cid in sorted(chains)]


def _rollout(chain_id: str, calls: Mapping[int, tuple[Mapping[str, Any], RolloutCall]]) -> Rollout:
    if sorted(calls) != list(range(len(calls))):
        raise DataError(f"chain {chain_id}: future_index values are not 0..{len(calls) - 1}")
    first = calls[0][0]
    scenarios = {str(row["scenario_id"]) for row, _ in calls.values()}
    if len(scenarios) != 1:
        raise DataError(f"chain {chain_id}: rows of several scenarios {sorted(scenarios)}")
    return Rollout(
        model=str(first["model"]),
        benchmark=str(first["benchmark"]),
        chain_id=chain_id,
        scenario_id=scenarios.pop(),
        calls=tuple(calls[i][1] for i in range(len(calls))),
    )


#: The CTE wording inside scae-judge-v1 prompts; a newer one would change their bytes unversioned.
JUDGE_CTE = "cte-v2"


def scenario_context(scenario: Scenario) -> str:
    """What the judge needs to check predictions: the source, the intervention and the
    observed calls with their true responses (the rollout's model saw the last 20 of these)."""
    history = [cte_prompts.call_line(c.op, c.args, c.response) for c in scenario.prefix]
    shown = cte_prompts.History(history, observed=len(history))
    intervention = intervention_data(scenario.intervention)
    source = scenario.shown_source
    block = cte_prompts.intervention_block(intervention, source, shown, JUDGE_CTE)
    return (
        "A model simulated the stateful service below, predicting each response in turn; each "
        "of its prompts held its own earlier predictions, not the true responses.\n\n"
        f"Service source:\n```python\n{source.rstrip()}\n```\n\n"
        f"Intervention:\n{block}\n\n"
        f"Observed calls with the service's true responses (oldest first):\n"
        f"{cte_prompts.format_history(shown)}"
    )


def _shown(call: RolloutCall) -> str:
    # As the rollout itself showed it to the model: an unparsed answer is the invalid marker.
    value = call.prediction if call.status == "ok" else cte_prompts.INVALID_PREDICTION
    return cte_prompts.dump(value, sort_keys=True)


def rollout_trajectory(rollout: Rollout, scenario: Scenario) -> Trajectory:
    """The judge's view of a rollout: step i is scored call i and the model's prediction."""
    requests = scenario.scored
    if len(requests) < len(rollout.calls):
        raise DataError(
            f"chain {rollout.chain_id}: {len(rollout.calls)} calls but scenario "
            f"{scenario.item_id} has {len(requests)} scored calls"
        )
    correct = sum(c.correct for c in rollout.calls)
    return Trajectory(
        id=rollout.chain_id,
        task=scenario_context(scenario),
        steps=tuple(
            JudgeStep(tool=req.op, target=cte_prompts.dump(req.args), output=_shown(call))
            for req, call in zip(requests, rollout.calls, strict=False)
        ),
        outcome=(
            f"{correct} of {len(rollout.calls)} predicted responses equal the service's true "
            "responses."
        ),
    )


def _judge_scores(rows: Sequence[JudgeRow], reference: Mapping[str, int]) -> dict[str, Any]:
    scored = [(r.step, reference[r.episode_id]) for r in rows if r.step is not None]
    dist = [t - c for t, c in scored]
    n = len(rows)
    visible = sum(reference[r.episode_id] <= r.visible_steps for r in rows)
    hits = sum(d == 0 for d in dist)
    return {
        "planned": n,
        "answered": len(scored),
        "reference_visible": visible,
        "hits": hits,
        "hit_rate": hits / len(scored) if scored else None,
        "hit_rate_planned": hits / n if n else None,
        "within_one": sum(abs(d) <= 1 for d in dist) / len(scored) if scored else None,
        "mean_signed_distance": sum(dist) / len(dist) if dist else None,
        "mean_abs_distance": sum(abs(d) for d in dist) / len(dist) if dist else None,
    }


def score_judges(
    rows: Iterable[JudgeRow], reference: Mapping[str, int], *, seed: int, resamples: int
) -> dict[str, Any]:
    """Per judge: per condition the scores against `reference` (episode id -> certified first
    wrong call), and the displacement between the conditions."""
    by_judge: dict[str, list[JudgeRow]] = {}
    for r in rows:
        if r.episode_id not in reference:
            raise DataError(f"judge {r.judge}: chain {r.episode_id} has no certified reference")
        by_judge.setdefault(r.judge, []).append(r)
    out: dict[str, Any] = {}
    for judge in sorted(by_judge):
        mine = by_judge[judge]
        out[judge] = {
            "conditions": {
                c: _judge_scores([r for r in mine if r.condition == c], reference)
                for c in CONDITIONS
            },
            "displacement": displacement(pairs(mine), seed=seed, resamples=resamples),
        }
    return out


def certified_reference(all_rollouts: Iterable[Rollout]) -> dict[str, int]:
    """chain id -> certified first wrong call, for the chains that are judged."""
    return {
        r.chain_id: r.first_wrong for r in all_rollouts if r.first_wrong is not None and r.complete
    }


def reference_counts(all_rollouts: Sequence[Rollout]) -> dict[str, int]:
    """How many chains were judged and why the others were not."""
    return {
        "chains": len(all_rollouts),
        "judged": sum(r.judgeable for r in all_rollouts),
        "all_correct": sum(r.complete and r.first_wrong is None for r in all_rollouts),
        "incomplete": sum(not r.complete for r in all_rollouts),
    }
