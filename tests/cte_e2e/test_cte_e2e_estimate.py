"""`tally scae estimate` on CTE free rollouts answered by a scripted mock model, so every value
of the estimate is known by hand (docs/scae.md, "The replay estimator").

The script answers every call right except the first request of the prompt at call K, which
gets WRONG (the parent run asks it first); with `alternating`, that prompt's answers alternate
WRONG, right, WRONG, ... instead. Every prompt the estimate can send is scripted (the recorded
path, the all-right path and, per point, the path with the alternative spliced in), so an
answer the mock generates instead (never a value match) would show in the numbers.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import orjson
from cte_e2e_kit import WRONG, builtin_records, prompt_sha, record_rollouts, write_records

from evaltally.benchmarks.base import StepAnswer
from evaltally.benchmarks.cte.benchmark import CteBenchmark
from evaltally.benchmarks.scae_estimate.outcome import plausible_wrong
from evaltally.config import BenchmarkConfig
from evaltally.prompts.cte import PROMPT_VERSION
from evaltally.records import PlannedCall, Status
from testkit import REPO, tally

T = 40


def _path(bench: CteBenchmark, sid: str, values: dict[int, Any]) -> list[tuple[str, Any]]:
    """(prompt sha, answer) along a free rollout answering `values[i]` at i, else right."""
    scenario = bench.scenarios[sid]
    out: list[tuple[str, Any]] = []
    earlier: list[StepAnswer] = []
    for i in range(T):
        spec = {"future_index": i, "prompt_version": PROMPT_VERSION}
        call = PlannedCall("c", "ch", i, "m", "cte", sid, 0, "free_rollout", spec)
        value = values.get(i, scenario.scored[i].response)
        out.append((prompt_sha(bench.render(call, earlier)), value))
        earlier.append(StepAnswer(i, Status.OK, json.dumps(value), value))
    return out


def _parent(tmp_path: Path, mock_process: Any, k: int, points: list[int], alternating: bool):
    data = write_records(tmp_path / "one.jsonl", builtin_records(1, domains=("bank",)))
    cfg = BenchmarkConfig("cte", "cte", 1, {"data": str(data)}, tmp_path, tmp_path / "c.toml", 0)
    bench = CteBenchmark(cfg)
    (sid,) = bench.scenarios
    scenario = bench.scenarios[sid]
    right = [c.response for c in scenario.scored[:T]]
    recorded = _path(bench, sid, {k: WRONG})
    first = [json.dumps(WRONG), json.dumps(right[k])] if alternating else (
        [json.dumps(WRONG)] + [json.dumps(right[k])] * 100)  # fmt: skip
    script: dict[str, list[str]] = {recorded[k][0]: first}
    paths = [(recorded, None), (_path(bench, sid, {}), None)]
    for p in points:  # the alternative spliced in at p (not sent: skip p itself)
        hit = p != k
        alt = plausible_wrong(scenario, p) if hit else right[p]
        before = {k: WRONG} if p > k else {}  # the recorded prefix holds WRONG at K
        paths.append((_path(bench, sid, {**before, p: alt}), p))
    for path, spliced in paths:
        for i, (sha, _) in enumerate(path):
            if i != spliced:
                script.setdefault(sha, [json.dumps(right[i])])
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"sha256": s, "answers": a}) + "\n"
                               for s, a in script.items()))  # fmt: skip
    mock = mock_process("--answers-file", str(answers))
    return record_rollouts(tmp_path, mock.base_url, data), mock


def _report(run_dir: Path) -> dict[str, Any]:
    done = tally("report", str(run_dir))
    assert done.returncode == 0, done.stderr
    data = orjson.loads((run_dir / "report.json").read_bytes())
    (model,) = data["sections"]["scae_estimate"]["models"].values()
    return dict(model)


def _hashes(run_dir: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{run_dir / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_estimate_localises_the_one_step_that_moves_y(tmp_path: Path, mock_process: Any) -> None:
    k, points = 10, [0, 8, 16, 24, 32]
    parent, mock = _parent(tmp_path, mock_process, k, points, alternating=False)
    before = (parent / "ledger.sqlite").read_bytes()
    out = tmp_path / "est"
    plan = tally("scae", "estimate", str(parent), "--replays", "4", "-o", str(out), "--plan")
    assert plan.returncode == 0, plan.stderr
    calls = 4 * sum((T - p) + (T - p - 1) for p in points)
    assert f"total planned calls: {calls:,} (nothing was sent)" in plan.stdout
    assert mock.stats()["total"] == T
    done = tally("scae", "estimate", str(parent), "--replays", "4", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert mock.stats()["total"] == T + calls
    assert (parent / "ledger.sqlite").read_bytes() == before  # the parent is never written

    # Each replay's first request is the parent's own request at its point, byte for byte.
    recorded = dict(_hashes(parent, "SELECT p.step, o.request_hash FROM planned p JOIN "
                                    "outcomes o USING (call_id)"))  # fmt: skip
    firsts = _hashes(out, "SELECT p.spec_json, o.request_hash FROM planned p JOIN outcomes o "
                          "USING (call_id) WHERE p.step = 0")  # fmt: skip
    replay_firsts = [(json.loads(s), h) for s, h in firsts if '"replay"' in s]
    assert len(replay_firsts) == 4 * len(points) * 2  # replay and alternative arms
    for spec, digest in replay_firsts:
        if spec["arm"] == "replay":
            assert digest == recorded[spec["at"]], spec

    s = _report(out)
    (chain,) = s["chains"]
    y = (T - 1) / T
    assert chain["y_recorded"] == y and chain["first_wrong"] == k + 1
    # v at every point, by hand: replays from p <= K get call K right, later ones keep WRONG.
    assert [p["v"] for p in chain["points"]] == [1.0, 1.0, y, y, y]
    obs = [g["observational"] for g in chain["segments"]]
    assert [round(d, 12) for d in obs] == [0.0, -1 / T, 0.0, 0.0, 0.0]
    assert abs(chain["telescoping_residual"]) < 1e-12  # sum = v_T - v_0 = Y - v_0
    assert s["telescoping_max_residual"] < 1e-12
    # A deterministic model: no entropy anywhere, every point takes the intervention branch.
    assert all(p["entropy"] == 0.0 for p in chain["points"])
    assert s["branches"] == {"observational": 0, "intervention": 5}
    assert s["positive_entropy"] == 0.0 and s["zero_variance_points"] == 1.0
    # Intervention: the recorded (right) call against the plausible wrong one, rest replayed.
    alt = [1 - 1 / T, 1 - 1 / T, 1 - 2 / T, 1 - 2 / T, 1 - 2 / T]
    assert [p["alternative"] for p in chain["points"]] == ["wrong"] * 5
    for g, v, a in zip(chain["segments"], [1.0, 1.0, y, y, y], alt, strict=True):
        assert g["branch"] == "intervention" and math.isclose(g["delta"], v - a)
        assert math.isclose(g["p"], 2 / 70) and g["significant"]  # 4 vs 4, constant arms
    assert chain["blame"] == {"scored": False, "why": "no negative contribution",
                              "reference": 1}  # fmt: skip

    # tau_H below 0 makes every point observational: the contribution localises at K.
    copy = out / "config.toml"
    copy.write_text(copy.read_text().replace("tau_h = 0.0", "tau_h = -1.0"))
    s = _report(out)
    (chain,) = s["chains"]
    assert [g["branch"] for g in chain["segments"]] == ["observational"] * 5
    assert chain["blame"]["exact"] == 1.0 and chain["blame"]["signed"] == 0.0
    # The family, by hand: p = 1, 2/70, 1, 1 (the last segment has no Wilcoxon p: n = 0 < 6);
    # BH: 2/70 * 4 / 1 = 0.114 > 0.10, so nothing survives.
    ps = [g["p"] for g in chain["segments"]]
    assert ps[0] == 1.0 and math.isclose(ps[1], 2 / 70) and ps[2:] == [1.0, 1.0, None]
    assert math.isclose(chain["segments"][1]["q"], 8 / 70)
    assert s["families"]["observational"]["significant"] == 0
    assert tally("resume", str(out)).returncode == 0
    assert mock.stats()["total"] == T + calls

    # Beside a judge on the same chain, in segments: `last_visible` blames call 40 with the
    # full trace (segment 4) and call 24 of the 0.6 prefix (segment 2); the reference is 1.
    judges = str(REPO / "configs" / "scae-example.toml")
    judged = tally("scae", "cte-judge", str(parent), "--judges", judges, "--judge",
                   "last_visible", "-o", str(tmp_path / "j"))  # fmt: skip
    assert judged.returncode == 0, judged.stderr
    for run, export in ((out, "e.jsonl"), (tmp_path / "j", "j.jsonl")):
        assert tally("export", str(run), "-o", str(tmp_path / export)).returncode == 0
    shown = tally("scae", "compare", str(tmp_path / "e.jsonl"), str(tmp_path / "j.jsonl"))
    assert shown.returncode == 0, shown.stderr
    assert "| estimator | 1 | 1.000 | 1.000 | +0.000 | - |" in shown.stdout
    assert "| last_visible (full) | 1 | 0.000 | 0.000 | +3.000 | 0.000 |" in shown.stdout
    assert "| last_visible (prefix) | 1 | 0.000 | 1.000 | +1.000 | 0.000 |" in shown.stdout


def test_two_buckets_at_a_known_point_give_ln2(tmp_path: Path, mock_process: Any) -> None:
    k = 8
    parent, mock = _parent(tmp_path, mock_process, k, [k], alternating=True)
    out = tmp_path / "est"
    done = tally("scae", "estimate", str(parent), "--at", str(k), "--replays", "4", "-o",
                 str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert mock.stats()["total"] == T + 4 * ((T - k) + (T - k - 1))
    s = _report(out)
    (chain,) = s["chains"]
    (point,) = chain["points"]
    assert math.isclose(point["entropy"], math.log(2)) and point["branch"] == "observational"
    y = (T - 1) / T
    assert math.isclose(point["v"], (2 * 1.0 + 2 * y) / 4)
    (seg,) = chain["segments"]
    assert math.isclose(seg["delta"], y - (2 + 2 * y) / 4) and seg["p"] is None  # n = 2 < 6
    # The recorded call was wrong: its alternative is the executor's answer.
    assert point["alternative"] == "correct" and math.isclose(seg["intervention"], y - 1.0)
    assert chain["blame"]["exact"] == 1.0 and chain["first_wrong"] == k + 1
