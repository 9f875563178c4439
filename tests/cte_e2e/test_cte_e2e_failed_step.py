"""A free-rollout step that gets no answer: the release's "continue" (the step is shown as
MODEL_INVALID_JSON and the chain carries on) and "block", each through a real run and resume.

The mock fails the first attempt of one step's request body with a 400 (the call fails at once);
`tally resume` re-sends it and gets an answer. In "continue" mode the later steps were answered
seeing the failure marker: resume never re-sends them and never re-renders them with the new
answer (the ledger keeps what each step saw), and `tally verify` passes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from cte_e2e_kit import builtin_records, scripted_rollout, write_records

from evaltally.benchmarks.cte.benchmark import CteBenchmark
from evaltally.benchmarks.cte.collect import collect
from evaltally.benchmarks.cte.grade import GradedCall, summarize
from evaltally.benchmarks.cte.report import CteGrader
from evaltally.config import BenchmarkConfig
from evaltally.ledger import unpack_body
from evaltally.report.section import GradeSettings
from testkit import MockProcess, tally

INVALID = '{"error": {"code": "MODEL_INVALID_JSON"}}'


def _failing_step(record: dict[str, Any]) -> tuple[int, str]:
    """A scored call from step 3 on whose `op(args)` appears once among the 40 (so the fault
    hits exactly one request body), and the text that identifies its prompt."""
    calls = [f"{c['op']}({json.dumps(c['args'], ensure_ascii=False)})"
             for c in record["trace_counterfactual"][:40]]  # fmt: skip
    step = next(i for i in range(3, 40) if calls.count(calls[i]) == 1)
    return step, f"## New call\n{calls[step]}\n"


def _run(tmp_path: Path, mock_process: Callable[..., MockProcess], mode: str) -> dict[str, Any]:
    record = builtin_records(1, domains=("bank",))[0]
    data = write_records(tmp_path / "one.jsonl", [record])
    step, match = _failing_step(record)
    mock_cfg = tmp_path / "mock.toml"
    mock_cfg.write_text(
        f'[[mock.faults]]\nkind = "400"\nscope = "body"\nmatch = {json.dumps(match)}\n'
    )
    # Every answer is right: the resumed step's too, so only how it is scored can cost VM.
    cfg = BenchmarkConfig("cte", "cte", 1, {"data": str(data)}, tmp_path, tmp_path / "x.toml", 0)
    script = scripted_rollout(
        CteBenchmark(cfg), record["item_id"], None, failed_at=step if mode == "continue" else None
    )
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"sha256": sha, "answer": json.dumps(value)}) + "\n"
                               for sha, value in script))  # fmt: skip
    mock = mock_process("--config", str(mock_cfg), "--answers-file", str(answers))
    config = tmp_path / "run.toml"
    config.write_text(
        '[run]\nname = "r"\nruns_dir = "runs"\n'
        f'[[models]]\nkey = "m"\nprovider = "openai"\nmodel = "x"\n'
        f'base_url = "{mock.base_url}/v1"\napi_key_env = "EVALTALLY_TEST_KEY"\n'
        f'[[benchmarks]]\nkind = "cte"\ndata = "{data}"\nprotocols = ["free_rollout"]\n'
        f'on_failed_step = "{mode}"\n'
    )
    first = tally("run", str(config))
    run_dir = tmp_path / "runs" / "r"
    statuses = _statuses(run_dir)
    sent_before = mock.stats()["total"]
    resumed = tally("resume", str(run_dir))
    return {
        "step": step,
        "first": first,
        "statuses": statuses,
        "resumed": resumed,
        "run_dir": run_dir,
        "sent_before": sent_before,
        "sent_after": mock.stats()["total"],
        "final": _statuses(run_dir),
        "bodies": _first_bodies(run_dir),
    }


def _statuses(run_dir: Path) -> dict[int, str]:
    return {r["step"]: r["status"] for r in _export(run_dir)}


def _export(run_dir: Path) -> list[dict[str, Any]]:
    export = run_dir.parent / "e.jsonl"
    export.unlink(missing_ok=True)
    assert tally("export", str(run_dir), "-o", str(export)).returncode == 0
    return [orjson.loads(x) for x in export.read_bytes().splitlines()]


def _scored(run_dir: Path) -> tuple[list[GradedCall], dict[str, Any], str]:
    """The graded calls of the run's one chain, their summary and the report's intro."""
    collected = collect(run_dir.parent / "e.jsonl")
    (calls,) = collected.groups.values()
    grader = CteGrader()
    for row in _export(run_dir):
        grader.add(row)
    intro = grader.section(GradeSettings(seed=0, resamples=20, level=0.95)).intro
    return calls, summarize(calls, resamples=20), intro


def _first_bodies(run_dir: Path) -> dict[int, str]:
    """Step -> the user message of its first request."""
    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    try:
        rows = conn.execute(
            "SELECT p.step, a.request_body FROM attempts a JOIN planned p USING (call_id) "
            "WHERE a.kind = 'start' ORDER BY a.seq"
        ).fetchall()
    finally:
        conn.close()
    out: dict[int, str] = {}
    for step, body in rows:
        out.setdefault(step, str(orjson.loads(unpack_body(body))["messages"][-1]["content"]))
    return out


@pytest.mark.parametrize("mode", ["continue", "block"])
def test_a_failed_rollout_step(tmp_path: Path, mock_process: Any, mode: str) -> None:
    r = _run(tmp_path, mock_process, mode)
    step = r["step"]
    assert r["first"].returncode == 3, r["first"].stderr  # one call failed: resumable
    assert r["statuses"][step] == "failed"
    later = range(step + 1, 40)
    if mode == "continue":
        assert all(r["statuses"][s] == "ok" for s in later)
        assert INVALID in r["bodies"][step + 1]  # the failure marker took the step's place
        assert r["sent_before"] == 40
        # resume re-sends only the failed step; nothing answered is sent again or re-rendered
        assert r["sent_after"] == 41
    else:
        assert all(r["statuses"][s] == "blocked" for s in later)
        assert r["sent_before"] == step + 1
        assert r["sent_after"] == 41
        assert INVALID not in r["bodies"][step + 1]
    assert r["resumed"].returncode == 0, r["resumed"].stderr
    assert set(r["final"].values()) == {"ok"}
    verify = tally("verify", str(r["run_dir"]))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    rows = _export(r["run_dir"])
    late = [row["step"] for row in rows if row["answered_after_later_steps"]]
    calls, summary, intro = _scored(r["run_dir"])
    failed = next(c for c in calls if c.future_index == step)
    vm = summary["metrics"]["all_call_vm"]["value"]
    first_wrong = summary["metrics"]["median_first_wrong"]["value"]
    exact = summary["metrics"]["whole_trace_exact"]["value"]
    if mode == "continue":
        # The later steps saw the step as having no answer; so does the score (the release's
        # reading), although the resumed answer is right, and the report names the chain.
        assert late == [step]
        assert failed.prediction is None and not failed.answered
        assert (vm, first_wrong, exact) == (39 / 40, step + 1, 0.0)
        assert "answered (on resume) after its later steps" in intro
        assert str(rows[0]["scenario_id"]) in intro
    else:
        # blocked steps were never sent: the resumed answer is the one the chain went on with
        assert late == []
        assert failed.prediction == rows[step]["parsed"] and failed.answered
        assert (vm, first_wrong, exact) == (1.0, None, 1.0)
        assert "on resume" not in intro


def test_on_failed_step_is_validated(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(
        '[run]\nname = "b"\n[[models]]\nkey = "replay"\nprovider = "baseline"\n'
        '[[benchmarks]]\nkind = "cte"\non_failed_step = "retry"\n'
    )
    result = tally("plan", str(config))
    assert result.returncode == 2
    assert "benchmarks[0].on_failed_step: must be one of: block, continue" in result.stderr
