"""`tally fork` of a CTE free rollout: the recorded rollout is right everywhere but call 3; four
replays from call 3 get (in some order) two right and two wrong answers there and right answers
after, so entropy, outcome spread and reproduction are known exactly."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import orjson
from cte_e2e_kit import WRONG, builtin_records, record_rollouts, scripted_rollout, write_records

from evaltally.benchmarks.cte.benchmark import CteBenchmark
from evaltally.config import BenchmarkConfig
from testkit import tally

AT = 3


def test_fork_of_a_free_rollout_reports_entropy_spread_and_reproduction(
    tmp_path: Path, mock_process: Any
) -> None:
    data = write_records(tmp_path / "one.jsonl", builtin_records(1, domains=("bank",)))
    cfg = BenchmarkConfig("cte", "cte", 1, {"data": str(data)}, tmp_path, tmp_path / "c.toml", 0)
    bench = CteBenchmark(cfg)
    (sid,) = bench.scenarios
    recorded, right = scripted_rollout(bench, sid, AT), scripted_rollout(bench, sid, None)
    assert recorded[AT][0] == right[AT][0]  # call 3's prompt is the same on both paths
    target = bench.scenarios[sid].scored[AT].response
    # The n-th answer to call 3's prompt: the parent gets WRONG, the replays right, WRONG, ...
    script = [{"sha256": recorded[AT][0], "answers": [json.dumps(WRONG), json.dumps(target)]}]
    script += [{"sha256": sha, "answer": json.dumps(v)} for sha, v in recorded + right]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(s) + "\n" for s in script))
    mock = mock_process("--answers-file", str(answers))
    parent = record_rollouts(tmp_path, mock.base_url, data)
    export = tmp_path / "parent.jsonl"
    assert tally("export", str(parent), "-o", str(export)).returncode == 0
    chain = orjson.loads(export.read_bytes().splitlines()[0])["chain_id"]

    forked = tally("fork", str(parent), "--chain", chain, "--at", str(AT), "--replays", "4",
                   "-o", str(tmp_path / "fork"), "--bucket", "error.code")  # fmt: skip
    assert forked.returncode == 0, forked.stderr
    assert tally("report", str(tmp_path / "fork")).returncode == 0
    data_ = orjson.loads((tmp_path / "fork" / "report.json").read_bytes())
    s = data_["sections"]["fork"]["forks"][0]["summary"]
    # The parent ledger's hash is of the reused prefix (the file may still grow), and says so.
    (own, *_) = data_["data_sources"]["fork"]["files"]
    assert own["path"].endswith("ledger.sqlite") and own["hashed"].startswith("the reused prefix")
    assert "(SHA-256 of the reused prefix" in (tmp_path / "fork" / "report.md").read_text()
    # Buckets by error.code: the WRONG answer has none (null), nor has a right success answer.
    assert s["bucket_spec"] == "error.code" and s["replays"] == 4
    assert "error" not in target  # right and wrong answers alike carry no error code
    assert s["entropy"] == 0.0 and s["buckets"] == {"[null]": 4}
    assert s["reproduced"] == 2 and s["share_reproduced"] == 0.5
    n = 40 - AT
    o = s["outcome"]
    assert o["n"] == 4 and o["distinct"] == 2
    assert math.isclose(o["mean"], (2 * 1.0 + 2 * (n - 1) / n) / 4)
    assert math.isclose(o["variance"], (0.5 / n) ** 2)
    assert s["recorded_outcome"] == (n - 1) / n
    assert mock.stats()["total"] == 40 + 4 * n

    # Buckets are a grading choice, in no call id: bucket the same replays by exact value.
    copy = tmp_path / "fork" / "config.toml"
    copy.write_text(copy.read_text().replace('bucket = "error.code"', 'bucket = "value"'))
    assert tally("report", str(tmp_path / "fork")).returncode == 0
    again = orjson.loads((tmp_path / "fork" / "report.json").read_bytes())
    s = again["sections"]["fork"]["forks"][0]["summary"]
    assert math.isclose(s["entropy"], math.log(2)) and s["share_recorded_bucket"] == 0.5
    assert tally("resume", str(tmp_path / "fork")).returncode == 0
    assert mock.stats()["total"] == 40 + 4 * n
