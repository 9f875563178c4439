"""A scripted mock model through the real runner: known right and wrong answers give exactly
the hand-computed metrics; a free rollout's wrong step-3 answer shows up in later prompts."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import orjson
from cte_e2e_kit import builtin_records, write_records

from evaltally.benchmarks.base import StepAnswer
from evaltally.benchmarks.cte.benchmark import CteBenchmark
from evaltally.benchmarks.grading import grade_export
from evaltally.config import BenchmarkConfig
from evaltally.ledger import unpack_body
from evaltally.prompts.cte import PROMPT_VERSION
from evaltally.records import PlannedCall, Status
from testkit import exported, tally

WRONG = {"wrong": 3}


def _sha(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(messages[-1]["content"].encode()).hexdigest()


def _call(sid: str, protocol: str, i: int) -> PlannedCall:
    spec = {"future_index": i, "prompt_version": PROMPT_VERSION}
    step = i if protocol == "free_rollout" else 0
    return PlannedCall("c", "ch", step, "m", "cte", sid, 0, protocol, spec)


def test_scripted_model_metrics_and_rollout_feedback(tmp_path: Path, mock_process: Any) -> None:
    data = write_records(tmp_path / "two.jsonl", builtin_records(2, domains=("bank",)))
    cfg = BenchmarkConfig("cte", "cte", 1, {"data": str(data)}, tmp_path, tmp_path / "c.toml", 0)
    bench = CteBenchmark(cfg)
    (sid, sc), (sid2, sc2) = list(bench.scenarios.items())
    script: list[dict[str, Any]] = []
    # answers_revealed on scenario 1: i % 4 == 0 right (strict), == 1 right (fenced: tolerant),
    # == 2 wrong, == 3 unparsable. Scenario 2: everything right.
    expected_vm = 0
    for i in range(40):
        target = json.dumps(sc.scored[i].response)
        msgs = bench.render(_call(sid, "answers_revealed", i), [])
        answer = [target, f"```json\n{target}\n```", json.dumps(WRONG), "I think it fails"][i % 4]
        expected_vm += i % 4 < 2
        script.append({"sha256": _sha(msgs), "answer": answer})
        msgs = bench.render(_call(sid2, "answers_revealed", i), [])
        script.append({"sha256": _sha(msgs), "answer": json.dumps(sc2.scored[i].response)})
    # free rollout on scenario 1: right except step 3 (0-based), which is WRONG
    earlier: list[StepAnswer] = []
    for i in range(40):
        msgs = bench.render(_call(sid, "free_rollout", i), earlier)
        value = WRONG if i == 3 else sc.scored[i].response
        script.append({"sha256": _sha(msgs), "answer": json.dumps(value)})
        earlier.append(StepAnswer(i, Status.OK, json.dumps(value), value))
    # scenario 2's free rollout is unscripted: its first prompts equal the answers_revealed ones
    # (no earlier scored call shown yet, or shown identically), so those get scripted answers
    by_sha = {x["sha256"]: x["answer"] for x in script}
    earlier2: list[StepAnswer] = []
    hits2: list[bool] = []
    for i in range(40):
        text = by_sha.get(_sha(bench.render(_call(sid2, "free_rollout", i), earlier2)))
        value = json.loads(text) if text else None
        hits2.append(value == sc2.scored[i].response)
        status = Status.OK if value is not None else Status.PARSE_ERROR
        earlier2.append(StepAnswer(i, status, text or "UNSCRIPTED", value))
    first_wrong2 = hits2.index(False) + 1
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(json.dumps(s) for s in script) + "\n")

    mock = mock_process("--answers-file", str(answers), "--default-answer", "UNSCRIPTED")
    config = tmp_path / "m.toml"
    config.write_text(
        '[run]\nname = "m"\nruns_dir = "runs"\n'
        f'[[models]]\nkey = "scripted"\nprovider = "openai"\nmodel = "x"\n'
        f'base_url = "{mock.base_url}/v1"\napi_key_env = "EVALTALLY_TEST_KEY"\n'
        "[models.limits]\nconcurrency = 8\n"
        f'[[benchmarks]]\nkind = "cte"\ndata = "{data}"\n'
        'protocols = ["answers_revealed", "free_rollout"]\n'
    )
    run = tally("run", str(config))
    assert run.returncode == 0, run.stderr
    run_dir = tmp_path / "runs" / "m"
    export = tmp_path / "e.jsonl"
    rows = exported(run_dir, export)
    unscripted = {(r["protocol"], r["item_id"]) for r in rows if r["raw_text"] == "UNSCRIPTED"}
    assert unscripted <= {("free_rollout", sid2)}  # every scripted prompt was rendered as predicted
    paths = {r["parse_path"] for r in rows if r["protocol"] == "answers_revealed"}
    assert paths == {"strict", "tolerant", None}

    groups = {
        (g["model"], g["protocol"]): g
        for g in grade_export(export, resamples=0).section("cte")["groups"]
    }
    ar = groups[("scripted", "answers_revealed")]["summary"]
    assert ar["n_calls"] == 80
    assert ar["metrics"]["all_call_vm"]["value"] == (expected_vm + 40) / 80
    assert ar["metrics"]["parse_failure_rate"]["value"] == 10 / 80
    assert ar["metrics"]["coverage"]["value"] == 1.0
    assert ar["by_service"]["bank"]["n_scenarios"] == 2
    eff1 = set(sc.effect_steps())
    eff2 = set(sc2.effect_steps())
    eff_hits = sum(1 for i in eff1 if i % 4 < 2) + len(eff2)
    assert ar["metrics"]["effect_step_vm"]["value"] == eff_hits / (len(eff1) + len(eff2))

    fr = groups[("scripted", "free_rollout")]["summary"]["metrics"]
    # scenario 2 mostly got the mock's default answer: parse errors count wrong
    assert fr["all_call_vm"]["value"] == (39 + sum(hits2)) / 80
    assert fr["whole_trace_exact"]["value"] == 0.0
    assert fr["median_first_wrong"]["value"] == (4 + first_wrong2) / 2
    assert fr["vm_calls_1_10"]["value"] == (9 + sum(hits2[:10])) / 20

    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    try:
        bodies = conn.execute(
            "SELECT p.step, a.request_body FROM attempts a JOIN planned p USING (call_id) "
            "WHERE a.kind = 'start' AND p.protocol = 'free_rollout' AND p.item_id = ?",
            (sid,),
        ).fetchall()
    finally:
        conn.close()

    def user_text(body: bytes) -> str:
        return str(orjson.loads(unpack_body(body))["messages"][-1]["content"])

    wrong_line = f"-> {json.dumps(WRONG)}"
    seen = {step: wrong_line in user_text(body) for step, body in bodies}
    assert seen and not any(seen[s] for s in range(4))
    assert all(seen[s] for s in range(4, 24))  # shown while inside the 20-call window
