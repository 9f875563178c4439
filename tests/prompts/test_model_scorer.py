"""The `model` scorer: a grader model bound as its own role judges each answer; its verdict is
a planned call of the chain (in the plan, the export and the denominator), and a run killed
with SIGKILL mid-grading resumes to the same export as a run never interrupted."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from evaltally import load_config
from evaltally.benchmarks.binding import load_benchmarks
from evaltally.errors import EvaltallyError
from testkit import exported, kill_run_when, mock_model, tally

ITEMS = [
    {
        "id": f"q{i}",
        "messages": [{"role": "user", "content": f"question number {i}?"}],
        "target": f"right{i}",
    }
    for i in range(12)
]
# First matching line wins: the grader's requests (they quote the question) come first.
ANSWERS = [
    {"match": "Answer to grade:\nright", "answer": "It matches.\nVERDICT: CORRECT"},
    {"match": "Answer to grade:\nhalf", "answer": "VERDICT: PARTIAL"},
    {"match": "Answer to grade:", "answer": "VERDICT: INCORRECT"},
    {"match": "question number 1?", "model": "weak-model", "answer": "half1"},
    {"match": "question number 2?", "model": "weak-model", "answer": "wrong"},
    *({"match": f"question number {i}?", "answer": f"right{i}"} for i in range(12)),
]
VOLATILE = {"latency_ms", "attempts"}


def _setup(tmp_path: Path, base_url: str, name: str) -> Path:
    (tmp_path / "items.jsonl").write_text("\n".join(orjson.dumps(i).decode() for i in ITEMS))
    config = tmp_path / f"{name}.toml"
    config.write_text(
        f'[run]\nname = "{name}"\nruns_dir = "runs"\n'
        + mock_model("good", base_url, "concurrency = 2")
        + mock_model("weak", base_url, "concurrency = 2")
        + mock_model("judge", base_url, "concurrency = 1")
        + '[[benchmarks]]\nkind = "prompts"\npath = "items.jsonl"\nscorer = "model"\n'
        '[benchmarks.roles]\nsubject = ["good", "weak"]\ngrader = ["judge"]\n'
    )
    return config


def _export(run_dir: Path, out: Path) -> list[dict[str, Any]]:
    rows = exported(run_dir, out)
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]


def _verdicts(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            (n,) = conn.execute(
                "SELECT count(*) FROM outcomes o JOIN planned p ON p.call_id = o.call_id "
                "WHERE p.model = 'judge'"
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return 0
    return int(n)


def _answers(tmp_path: Path) -> Path:
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(orjson.dumps(a).decode() for a in ANSWERS) + "\n")
    return path


def test_two_models_graded_by_a_mock_grader(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process("--answers-file", str(_answers(tmp_path)))
    config = _setup(tmp_path, mock.base_url, "g")
    plan = tally("plan", str(config))
    assert "total planned calls: 48 (nothing was sent)" in plan.stdout, plan.stderr
    assert tally("run", str(config)).returncode == 0
    run_dir = tmp_path / "runs" / "g"
    rows = _export(run_dir, tmp_path / "e.jsonl")
    verdicts = [r for r in rows if r["role"] == "grader"]
    assert len(verdicts) == 24 and all(r["model"] == "judge" for r in verdicts)
    assert all(r["scorer"]["name"] == "model" and r["graded_step"] == 0 for r in verdicts)
    assert verdicts[0]["scorer"]["version"] == "builtin-1"
    assert tally("report", str(run_dir), "--resamples", "100").returncode == 0
    data = orjson.loads((run_dir / "report.json").read_bytes())["sections"]["prompts"]
    scores = data["scores"]["prompts"]
    assert scores["good"]["accuracy_ite"]["value"] == 1.0
    assert scores["weak"]["accuracy_ite"]["value"] == pytest.approx((10 + 0.5) / 12)
    assert data["paired"]["prompts"][0]["value"] == pytest.approx(1.5 / 12)
    graded = tally(
        "grade", str(tmp_path / "e.jsonl"), "-o", str(tmp_path / "g"), "--resamples", "100"
    )
    assert graded.returncode == 0, graded.stderr
    again = orjson.loads((tmp_path / "g" / "report.json").read_bytes())["sections"]["prompts"]
    assert again == data
    # Verdicts without the rows they grade cannot be attributed: one line, exit 2.
    only = tmp_path / "verdicts.jsonl"
    only.write_text("".join(orjson.dumps(r).decode() + "\n" for r in verdicts))
    cut = tally("grade", str(only), "--resamples", "0")
    assert cut.returncode == 2 and "has no row of the subject" in cut.stderr, cut.stderr


def test_kill_mid_grading_then_resume(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process("--answers-file", str(_answers(tmp_path)), "--latency-ms", "30")
    (tmp_path / "clean").mkdir()
    clean = _setup(tmp_path / "clean", mock.base_url, "clean")
    assert tally("run", str(clean)).returncode == 0
    expected = _export(tmp_path / "clean" / "runs" / "clean", tmp_path / "clean.jsonl")

    config = _setup(tmp_path, mock.base_url, "k")
    db = tmp_path / "runs" / "k" / "ledger.sqlite"
    kill_run_when(config, lambda: _verdicts(db) >= 5)
    assert 5 <= _verdicts(db) < 24  # killed mid-grading
    status = tally("status", str(tmp_path / "runs" / "k"))
    assert "state: interrupted (the last session did not close" in status.stdout, status.stdout
    resumed = tally("resume", str(tmp_path / "runs" / "k"))
    assert resumed.returncode == 0, resumed.stderr
    assert _verdicts(db) == 24
    assert _export(tmp_path / "runs" / "k", tmp_path / "k.jsonl") == expected


def test_the_model_scorer_needs_a_grader_role_and_targets(tmp_path: Path) -> None:
    (tmp_path / "items.jsonl").write_text(
        '{"id": "a", "messages": [{"role": "user", "content": "x"}]}\n'
    )
    config = tmp_path / "c.toml"
    base = (
        '[run]\nname = "c"\n[[models]]\nkey = "o"\nprovider = "baseline"\nmodel = "oracle"\n'
        '[[models]]\nkey = "j"\nprovider = "baseline"\nmodel = "grader-exact"\n'
        '[[benchmarks]]\nkind = "prompts"\npath = "items.jsonl"\nscorer = "model"\n'
    )
    config.write_text(base)
    with pytest.raises(EvaltallyError, match=r"benchmarks\[0\]\.roles: is required.*grader"):
        load_config(config)
    config.write_text(base + '[benchmarks.roles]\nsubject = ["o"]\ngrader = ["j"]\n')
    with pytest.raises(EvaltallyError, match="every item needs one"):
        load_benchmarks(load_config(config))
