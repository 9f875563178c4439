"""DexBench through the real runner against the mock provider (127.0.0.1), scripted by prompt:
a model that answers the ground truth scores 100% forward, one that answers known-good inputs
scores 100% backward on the instances that have one, garbage scores 0 with every planned
instance in the denominator; a re-grade repeats its verdicts without a request; kill -9 while
answers are being verified, then resume, leaves exactly one verdict per answer and the report
of an uninterrupted run."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from evaltally.benchmarks.dexbench.benchmark import DexBenchmark
from evaltally.benchmarks.dexbench.predictors import context, known_good_backward, oracle_forward
from evaltally.config import BenchmarkConfig
from evaltally.prompts.dexbench import PROMPT_VERSION
from evaltally.records import PlannedCall
from testkit import FAKE_KEY, tally

GARBAGE = "<answer>__import__('os').system('touch /tmp/dexbench-mock-pwned')</answer>"
CONFIG = """
[run]
name = "{name}"
runs_dir = "runs"
{models}
[[benchmarks]]
kind = "dexbench"
samples = 5
{options}
"""
MODEL = """
[[models]]
key = "{key}"
provider = "openai"
model = "{key}-model"
base_url = "{url}/v1"
api_key_env = "EVALTALLY_TEST_KEY"
[models.params]
temperature = 0.7
top_p = 0.9
max_tokens = 2048
[models.limits]
concurrency = 16
"""


def _bench(tmp_path: Path, **options: Any) -> DexBenchmark:
    return DexBenchmark(BenchmarkConfig("dexbench", "dexbench", 5, options, tmp_path, tmp_path, 0))


def _last_user_sha(bench: DexBenchmark, instance_id: str, task: str) -> str:
    spec: dict[str, Any] = {"prompt_version": PROMPT_VERSION}
    if task == "backward":
        spec["backward_mode"] = "mutate"
    call = PlannedCall("c", "ch", 0, "m", "dexbench", instance_id, 0, task, spec)
    text = bench.render(call, [])[-1]["content"]
    return hashlib.sha256(text.encode()).hexdigest()


def _script(tmp_path: Path, bench: DexBenchmark, model: str) -> Path:
    """The truth model's answers: ground truth forward; known-good inputs backward (instances
    without one are unscripted and get the mock's garbage)."""
    lines = []
    for iid, instance in bench.instances.items():
        forward = oracle_forward(context(instance, "forward"))
        lines.append({"sha256": _last_user_sha(bench, iid, "forward"), "answer": forward})
        if instance.known_good_input is not None:
            backward = known_good_backward(context(instance, "backward"))
            lines.append({"sha256": _last_user_sha(bench, iid, "backward"), "answer": backward})
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps({**x, "model": model}) + "\n" for x in lines))
    return path


def _config(tmp_path: Path, name: str, url: str, keys: tuple[str, ...], options: str) -> Path:
    models = "".join(MODEL.format(key=k, url=url) for k in keys)
    path = tmp_path / f"{name}.toml"
    path.write_text(CONFIG.format(name=name, models=models, options=options))
    return path


def _rows(run_dir: Path, out: Path) -> list[dict[str, Any]]:
    result = tally("export", str(run_dir), "-o", str(out))
    assert result.returncode == 0, result.stderr
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]


def _report(run_dir: Path) -> dict[str, Any]:
    result = tally("report", str(run_dir), "--resamples", "0")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = orjson.loads((run_dir / "report.json").read_bytes())
    return dict(data["sections"]["dexbench"])


def test_scripted_truth_and_garbage_models_and_an_offline_regrade(
    tmp_path: Path, mock_process: Any
) -> None:
    bench = _bench(tmp_path, limit=4)
    answers = _script(tmp_path, bench, "truth-model")
    mock = mock_process("--answers-file", str(answers), "--default-answer", GARBAGE)
    config = _config(tmp_path, "m", mock.base_url, ("truth", "garbage"), "limit = 4")
    run = tally("run", str(config))
    assert run.returncode == 0, run.stderr
    run_dir = tmp_path / "runs" / "m"
    rows = _rows(run_dir, tmp_path / "e.jsonl")
    assert len(rows) == 2 * 8 * 2 * 5  # models x instances x tasks x samples: all planned
    assert len({r["call_id"] for r in rows}) == len(rows)
    assert {r["sample"] for r in rows} == set(range(5))
    with_known = {i for i, inst in bench.instances.items() if inst.known_good_input is not None}
    assert with_known and all(i.startswith("humaneval/") for i in with_known)
    truth_backward = [r for r in rows if r["model"] == "truth" and r["task"] == "backward"]
    for r in truth_backward:  # every known-good answer verified and passed; the rest failed
        assert r["verification"]["status"] == ("passed" if r["item_id"] in with_known else "failed")
    assert not Path("/tmp/dexbench-mock-pwned").exists()

    section = _report(run_dir)
    groups = {(g["model"], g["source"]): g for g in section["groups"]}
    for source in ("cruxeval", "humaneval"):
        truth, garbage = groups[("truth", source)], groups[("garbage", source)]
        assert truth["instances"] == garbage["instances"] == 4
        assert truth["forward"]["pass@1"] == truth["forward"]["pass@5"] == 1.0
        assert truth["forward"]["jaccard@1"] == 1.0
        known = sum(i.startswith(source) for i in with_known) / 4
        assert truth["backward"]["pass@1"] == truth["backward"]["pass@5"] == known
        assert truth["dual"]["same_sample"]["pass@5"] == known
        assert truth["dual"]["unbiased"]["pass@5"] == known
        for task in ("forward", "backward"):
            block = garbage[task]
            assert block["calls"] == 20 and block["coverage"] == 1.0
            assert block["pass@1"] == block["pass@5"] == block["unbiased@5"] == 0.0
        assert garbage["forward"]["parse_outcomes"] == {"not_json": 20}
        assert garbage["backward"]["verification"]["reasons"] == {"not_a_literal": 20}
        assert garbage["dual"]["any_any"]["pass@5"] == 0.0

    sent = mock.stats()["total"]
    for _ in range(2):
        regraded = tally("regrade", str(run_dir))
        assert regraded.returncode == 0, regraded.stderr
        assert "80 answers verified again" in regraded.stdout
        assert "0 verdicts changed" in regraded.stdout
    assert mock.stats()["total"] == sent  # the re-grades asked no model anything
    assert _report(run_dir) == section


def _count(ledger: Path, sql: str) -> int:
    try:
        conn = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=1)
    except sqlite3.OperationalError:
        return 0
    try:
        return int(conn.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0
    finally:
        conn.close()


def test_kill_9_while_verifying_then_resume_leaves_one_verdict_per_answer(
    tmp_path: Path, mock_process: Any
) -> None:
    options = 'sources = ["humaneval"]\nlimit = 30\ntasks = ["backward"]'
    bench = _bench(tmp_path, sources=["humaneval"], limit=30, tasks=["backward"])
    mock = mock_process("--answers-file", str(_script(tmp_path, bench, "truth-model")))
    # instances without a known-good input get the mock's generated text: parse errors
    answers = 5 * sum(i.known_good_input is not None for i in bench.instances.values())
    assert answers > 100
    killed = _config(tmp_path, "killed", mock.base_url, ("truth",), options)
    whole = _config(tmp_path, "whole", mock.base_url, ("truth",), options)
    ledger = tmp_path / "runs" / "killed" / "ledger.sqlite"
    env = {**os.environ, "EVALTALLY_TEST_KEY": FAKE_KEY}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evaltally", "run", str(killed)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while _count(ledger, "SELECT count(*) FROM verifications") < 3:
        assert proc.poll() is None and time.monotonic() < deadline, "no verdict in time"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    at_kill = _count(ledger, "SELECT count(*) FROM verifications")
    assert 3 <= at_kill < answers  # killed while answers were still waiting for verdicts

    resumed = tally("resume", str(tmp_path / "runs" / "killed"))
    assert resumed.returncode == 0, resumed.stderr
    oks = "SELECT count(*) FROM outcomes WHERE status = 'ok'"
    assert _count(ledger, oks) == answers
    assert _count(ledger, "SELECT count(DISTINCT call_id) FROM verifications") == answers
    assert _count(ledger, "SELECT count(*) FROM verifications") == answers
    assert tally("verify", str(tmp_path / "runs" / "killed")).returncode == 0

    assert tally("run", str(whole)).returncode == 0
    assert _report(tmp_path / "runs" / "killed") == _report(tmp_path / "runs" / "whole")
