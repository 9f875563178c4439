"""A scripted judge on the mock provider, through the real runner, export and report: its
choices move 59 episodes later, 1 earlier and leave 10 tied, which must give the paper's sign-test
p-value (1.1e-16); an out-of-range and an unparsable answer are counted apart, never paired."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from scae_kit import episode_line, write_episodes

from evaltally.benchmarks.scae.benchmark import ScaeBenchmark
from evaltally.config import load_config
from evaltally.records import PlannedCall
from testkit import exported, tally

T = 10  # k = 6 at f = 0.6
SPLIT = [(9, 3)] * 59 + [(2, 5)] + [(4, 4)] * 10  # (full step, prefix step)


def _sha(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(messages[-1]["content"].encode()).hexdigest()


def test_59_later_1_earlier_10_ties_gives_the_papers_sign_test(
    tmp_path: Path, mock_process: Any
) -> None:
    episodes = [episode_line(f"ep{i:02d}", T) for i in range(len(SPLIT) + 2)]
    write_episodes(tmp_path / "episodes.jsonl", episodes)
    config = tmp_path / "j.toml"
    body = (
        '[run]\nname = "j"\nruns_dir = "runs"\n'
        '[[models]]\nkey = "judge-a"\nprovider = "openai"\nmodel = "judge-a"\n'
        'base_url = "http://BASE/v1"\napi_key_env = "EVALTALLY_TEST_KEY"\n'
        "[models.params]\ntemperature = 0.0\nmax_tokens = 64\n"
        '[[benchmarks]]\nkind = "scae"\nepisodes = "episodes.jsonl"\n'
    )
    config.write_text(body)
    bench = ScaeBenchmark(load_config(config).benchmarks[0])
    script = []
    answers = {**dict(enumerate(SPLIT)), len(SPLIT): ("not json", 13), len(SPLIT) + 1: (4, 7)}
    for i, (full, prefix) in answers.items():
        for condition, step in (("full", full), ("prefix", prefix)):
            call = PlannedCall("c", "ch", 0, "judge-a", "scae", f"ep{i:02d}", 0, condition,
                               {"rubric": "blame-v1", "fraction": "3/5"})  # fmt: skip
            text = f'{{"step": {step}, "reason": "scripted"}}' if isinstance(step, int) else step
            script.append({"sha256": _sha(bench.render(call, [])), "answer": text})
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(s) + "\n" for s in script))
    mock = mock_process("--answers-file", str(tmp_path / "answers.jsonl"))
    config.write_text(body.replace("http://BASE", mock.base_url))

    run = tally("run", str(config))
    assert run.returncode == 0, run.stderr
    run_dir = tmp_path / "runs" / "j"
    report = tally("report", str(run_dir))
    assert report.returncode == 0, report.stderr
    data = orjson.loads((run_dir / "report.json").read_bytes())
    judge = data["sections"]["scae"]["benchmarks"]["scae"]["summary"]["judges"]["judge-a"]
    d = judge["displacement"]
    assert (d["n"], d["later"], d["earlier"], d["ties"]) == (70, 59, 1, 10)
    assert d["sign_p"] == pytest.approx(2 * 61 / 2**60, rel=1e-12)
    assert f"{d['sign_p']:.2g}" == "1.1e-16"
    assert "| 59/1/10 |" in (run_dir / "report.md").read_text() and "1.1e-16" in report.stdout
    assert d["mean"]["value"] == pytest.approx((59 * 0.6 - 0.3) / 70)
    counts = judge["counts"]
    # ep70: unparsable full answer, step 13 of 6 shown; ep71: step 7 of 6 shown
    assert counts["full"]["unparsable"] == 1 and counts["prefix"]["out_of_range"] == 2
    assert counts["full"]["ok"] == 71 and counts["prefix"]["ok"] == 70
    assert mock.stats()["total"] == 144  # every call sent once

    export = tmp_path / "e.jsonl"
    rows = exported(run_dir, export)
    reasons = sorted(r["reason"].split(":")[0] for r in rows if r["status"] == "parse_error")
    assert reasons == ["out_of_range", "out_of_range", "unparsable"]
    graded = tally("grade", str(export), "-o", str(tmp_path / "g"))
    assert graded.returncode == 0, graded.stderr
    again = orjson.loads((tmp_path / "g" / "report.json").read_bytes())
    assert again["sections"] == data["sections"]
