"""`tally scae cte-judge`: scripted free rollouts whose first wrong calls were planted (call 4 of
one chain, call 30 of another), judged by a scripted mock judge and an offline judge in a new
run, scored against the certified first wrong call; the parent run is read, never written,
and the judge run resumes like any run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from cte_e2e_kit import builtin_records, prompt_sha, scripted_rollout, write_records

from evaltally.benchmarks.cte.benchmark import CteBenchmark
from evaltally.benchmarks.scae.benchmark import ScaeBenchmark
from evaltally.config import BenchmarkConfig
from evaltally.ledger import latest_meta
from evaltally.records import PlannedCall
from testkit import tally

PLANTED = (3, 29)  # 0-based index of the first wrong call of each scenario's rollout


def _write_script(path: Path, script: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in script))
    return path


def _model(key: str, base_url: str) -> str:
    return (
        f'[[models]]\nkey = "{key}"\nprovider = "openai"\nmodel = "{key}"\n'
        f'base_url = "{base_url}/v1"\napi_key_env = "EVALTALLY_TEST_KEY"\n'
        "[models.params]\ntemperature = 0.0\nmax_tokens = 256\n"
    )


def _files(run_dir: Path) -> dict[str, str]:
    """The run's files by content; a read-only SQLite reader may leave an empty WAL and its
    shared-memory index behind, which hold no data."""
    wal = run_dir / "ledger.sqlite-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(run_dir.iterdir())
        if p.is_file() and p.name not in (".lock", "ledger.sqlite-wal", "ledger.sqlite-shm")
    }


def test_cte_judge_scores_judges_against_the_planted_first_wrong_call(
    tmp_path: Path, mock_process: Any
) -> None:
    data = write_records(tmp_path / "two.jsonl", builtin_records(2, domains=("bank",)))
    cfg = BenchmarkConfig("cte", "cte", 1, {"data": str(data)}, tmp_path, tmp_path / "c.toml", 0)
    cte = CteBenchmark(cfg)
    sids = list(cte.scenarios)
    script = [
        {"sha256": sha, "answer": json.dumps(value)}
        for sid, at in zip(sids, PLANTED, strict=True)
        for sha, value in scripted_rollout(cte, sid, at)
    ]
    model_mock = mock_process("--answers-file", str(_write_script(tmp_path / "m.jsonl", script)))
    (tmp_path / "cte.toml").write_text(
        '[run]\nname = "rollouts"\nruns_dir = "runs"\n'
        + _model("sim", model_mock.base_url)
        + f'[[benchmarks]]\nkind = "cte"\ndata = "{data}"\nprotocols = ["free_rollout"]\n'
    )
    assert tally("run", str(tmp_path / "cte.toml")).returncode == 0
    parent = tmp_path / "runs" / "rollouts"
    before = _files(parent)

    # The judge's answers, scripted by prompt: the prompts are rendered from the recorded run.
    scae = ScaeBenchmark(
        BenchmarkConfig(
            "scae", "scae", 1, {"cte_run": str(parent)}, tmp_path, tmp_path / "s.toml", 0
        )
    )
    chains = {item.fields["scenario_id"]: item.id for item in scae.items.values()}
    assert {scae.items[c].fields["first_wrong"] for c in chains.values()} == {4, 30}
    choices = {sids[0]: {"full": 4, "prefix": 3}, sids[1]: {"full": 31, "prefix": 24}}
    judge_script = []
    for sid, chain in chains.items():
        for condition, step in choices[sid].items():
            spec = {"rubric": "first-wrong-v1", "fraction": "3/5"}
            call = PlannedCall("c", "ch", 0, "j1", "scae", chain, 0, condition, spec)
            judge_script.append(
                {"sha256": prompt_sha(scae.render(call, [])), "answer": json.dumps({"step": step})}
            )
    judge_mock = mock_process(
        "--answers-file", str(_write_script(tmp_path / "j.jsonl", judge_script))
    )
    judges = tmp_path / "judges.toml"
    judges.write_text(
        _model("j1", judge_mock.base_url)
        + '[[models]]\nkey = "last_visible"\nprovider = "baseline"\nmodel = "last_visible"\n'
    )

    judged = tally("scae", "cte-judge", str(parent), "--judges", str(judges), "--name", "judged")
    assert judged.returncode == 0, judged.stderr
    run_dir = tmp_path / "runs" / "judged"
    assert _files(parent) == before  # the parent run was only read
    assert tally("verify", str(parent)).returncode == 0
    assert judge_mock.stats()["total"] == 4
    parents = latest_meta(run_dir, "parents")
    assert parents["scae"][0]["run"] == str(parent.resolve())
    assert parents["scae"][0]["chains_judged"] == 2

    report = tally("report", str(run_dir))
    assert report.returncode == 0, report.stderr
    section = orjson.loads((run_dir / "report.json").read_bytes())["sections"]["scae"]
    entry = section["benchmarks"]["scae"]
    assert entry["source"] == "cte_rollouts"
    assert entry["cte_judge"]["reference_counts"] == {
        "chains": 2, "judged": 2, "all_correct": 0, "incomplete": 0}  # fmt: skip
    full, prefix = (entry["cte_judge"]["scores"]["j1"]["conditions"][c] for c in ("full", "prefix"))
    assert (full["hit_rate"], full["within_one"], full["mean_signed_distance"]) == (0.5, 1.0, 0.5)
    assert (prefix["hit_rate"], prefix["within_one"]) == (0.0, 0.5)
    assert prefix["mean_signed_distance"] == -3.5 and prefix["reference_visible"] == 1
    offline = entry["cte_judge"]["scores"]["last_visible"]["conditions"]
    assert offline["full"]["mean_signed_distance"] == pytest.approx((36 + 10) / 2)
    d = entry["summary"]["judges"]["j1"]["displacement"]
    assert (d["later"], d["mean"]["value"]) == (2, pytest.approx((1 / 40 + 7 / 40) / 2))
    assert "It is not the step most responsible" in (run_dir / "report.md").read_text()

    resumed = tally("resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    assert judge_mock.stats()["total"] == 4  # nothing recorded is sent again
    export = tmp_path / "e.jsonl"
    assert tally("export", str(run_dir), "-o", str(export)).returncode == 0
    graded = tally("grade", str(export), "-o", str(tmp_path / "g"))
    assert graded.returncode == 0, graded.stderr
    assert (
        orjson.loads((tmp_path / "g" / "report.json").read_bytes())["sections"]["scae"] == section
    )


def test_cte_judge_refuses_a_run_without_free_rollouts(tmp_path: Path) -> None:
    (tmp_path / "judges.toml").write_text(
        '[[models]]\nkey = "last_visible"\nprovider = "baseline"\nmodel = "last_visible"\n'
    )
    missing = tally(
        "scae", "cte-judge", str(tmp_path / "nope"), "--judges", str(tmp_path / "judges.toml")
    )
    assert missing.returncode == 2 and "not a run directory" in missing.stderr
    assert "Traceback" not in missing.stderr
