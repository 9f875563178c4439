"""The whole pure path on the shipped example set: episodes -> provenance -> both judge
requests -> scripted judge answers (text) -> strict parse -> rows -> statistics -> tables.

Scripted judges, whose choices are known:
- "late": full trace -> the last gold-provenance step (the last step when there is none);
  prefix -> the first gold-provenance step it can see (step 1 when there is none);
- "position": full trace -> the last step; prefix -> the last visible step, except that on
  tinyhttp-31 it names step 13 of the 12 it was shown (an out-of-range answer).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from evaltally.benchmarks.scae.conditions import CONDITIONS, FULL, episode_messages
from evaltally.benchmarks.scae.episodes import Episode, example_path, load_episodes
from evaltally.benchmarks.scae.parse import recorded_answer
from evaltally.benchmarks.scae.provenance import StepProvenance, episode_provenance
from evaltally.benchmarks.scae.rows import JudgeRow
from evaltally.benchmarks.scae.summary import summarize
from evaltally.benchmarks.scae.tables import all_tables
from evaltally.report.tables import to_markdown

Choice = Callable[[str, tuple[StepProvenance, ...], int], int]


def late(condition: str, prov: tuple[StepProvenance, ...], visible: int) -> int:
    gold = [s for s, p in enumerate(prov[:visible], 1) if p.gold]
    if condition == FULL:
        return gold[-1] if gold else visible
    return gold[0] if gold else 1


def position(condition: str, prov: tuple[StepProvenance, ...], visible: int) -> int:
    return visible + 1 if (condition != FULL and len(prov) == 20) else visible


def judge_rows(episodes: list[Episode], judge: str, choose: Choice) -> list[JudgeRow]:
    rows = []
    for e in episodes:
        prov = episode_provenance(e)
        for condition in CONDITIONS:
            user = episode_messages(e, condition)[1]["content"]
            visible = int(user.split("## Trajectory: steps 1-")[1].split("\n")[0])
            raw = f'{{"step": {choose(condition, prov, visible)}, "reason": "scripted"}}'
            status, step = recorded_answer("parse_error", raw, visible)
            rows.append(
                JudgeRow(e.id, judge, condition, status, step, e.total_steps, visible, prov)
            )
    return rows


# Hand derivation from the per-step provenance of the 16 episodes (tests of provenance pin it):
# the "late" judge moves later everywhere except tinyhttp-12 (its only gold step, 3, is inside
# the prefix) and pixelpipe-1 (one step): 14 later, 2 ties. Per-episode displacement
# (full - prefix) / T, in file order:
LATE_D = [4/6, 4/6, 3/4, 0, 1/2, 7/8, 5/6, 4/5, 4/5, 3/4, 3/4, 7/8, 3/4, 2/3, 0, 19/20]  # fmt: skip
# Gold-provenance class sizes m of the 13 episodes that have one (3 have none).
LATE_M = [4, 4, 3, 1, 2, 5, 4, 4, 3, 6, 3, 1, 12]


def test_statistics_of_scripted_judges_on_the_example_set() -> None:
    episodes = load_episodes(example_path())
    rows = judge_rows(episodes, "late", late) + judge_rows(episodes, "position", position)
    s = summarize(rows, seed=0, resamples=2000, permutations=2000)
    lj, pj = s["judges"]["late"], s["judges"]["position"]

    d = lj["displacement"]
    assert (d["n"], d["later"], d["earlier"], d["ties"]) == (16, 14, 0, 2)
    assert d["mean"]["value"] == pytest.approx(sum(LATE_D) / 16)
    assert d["sign_p"] == 2 / 2**14
    e = lj["enrichment"]
    assert e["rate"]["value"] == 13 / 16
    assert e["baseline"] == pytest.approx(0.5813244047619047)  # mean per-episode gold share
    assert e["step_share"] == 52 / 93
    lb = lj["late_bias"]  # the last of m gold steps: q = (m - 1/2) / m
    assert lb["n"] == 13 and lb["mean"] == pytest.approx(sum(1 - 0.5 / m for m in LATE_M) / 13)
    r = lj["rules"]
    assert r["chance"] == pytest.approx(0.2610119047619048)  # mean 1/T_i
    assert r["rules"]["last_gold"]["agreement"] == 13 / 16
    assert r["rules"]["last_step"]["agreement"] == 15 / 16  # all but tinyhttp-12
    assert r["within_class_chance"] == pytest.approx(sum(1 / m for m in LATE_M) / 16)

    # "position": full = T, prefix = k; its out-of-range answer drops tinyhttp-31 from pairs.
    assert pj["counts"]["prefix"]["out_of_range"] == 1
    pd = pj["displacement"]
    assert (pd["n"], pd["later"], pd["ties"]) == (15, 14, 1)  # pixelpipe-1 (T = k = 1) ties
    assert pj["enrichment"]["rate"]["value"] == 12 / 16
    across = s["across_judges"]
    assert across["n_common"] == 15
    t5 = {j: v["displacement"]["mean"]["value"] for j, v in across["judges"].items()}
    assert t5["late"] == pytest.approx(sum(LATE_D[:15]) / 15)
    # (T - k) / T: 1/2 on ten episodes, 3/7, 2/5 twice, 2/3, and 0 for pixelpipe-1
    assert t5["position"] == pytest.approx((10 / 2 + 3 / 7 + 4 / 5 + 2 / 3) / 15)
    assert across["heterogeneity"]["displacement"]["p"] < 0.05  # 0.646 vs 0.460: they differ

    md = "\n".join(to_markdown(t) for t in all_tables(s))
    assert "| late | 16 |" in md and "| 14/0/2 |" in md
