"""A two-model run against the mock provider with scripted answers: every scored export row
carries target, scorer and score; `tally grade` on the export (JSONL and CSV) gives the report's
numbers; a tampered score is counted, never trusted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from testkit import exported, mock_model, tally

ITEMS = [
    {"id": "q1", "messages": [{"role": "user", "content": "alpha question"}], "target": "41"},
    {"id": "q2", "messages": [{"role": "user", "content": "beta question"}], "target": "42"},
    {"id": "q3", "messages": [{"role": "user", "content": "gamma question"}], "target": "7"},
    {"id": "chat", "turns": ["delta one", "delta two"], "target": "9"},
]
ANSWERS = [
    {"match": "alpha", "answer": "it is 41"},
    {"match": "beta", "model": "good-model", "answer": "42"},
    {"match": "beta", "answer": "maybe 40"},
    {"match": "gamma", "answer": "seven"},
    {"match": "delta two", "answer": "9."},
    {"match": "delta one", "answer": "first"},
]


def test_two_models_scored_graded_from_the_export_alone(tmp_path: Path, mock_process: Any) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(orjson.dumps(a).decode() for a in ANSWERS) + "\n")
    mock = mock_process("--answers-file", str(answers))
    (tmp_path / "items.jsonl").write_text("\n".join(orjson.dumps(i).decode() for i in ITEMS) + "\n")
    config = tmp_path / "s.toml"
    config.write_text(
        '[run]\nname = "s"\nruns_dir = "runs"\n'
        + mock_model("good", mock.base_url, "concurrency = 4")
        + mock_model("weak", mock.base_url, "concurrency = 4")
        + '[[benchmarks]]\nkind = "prompts"\npath = "items.jsonl"\nsamples = 2\n'
        'scorer = "number"\n'
    )
    assert tally("run", str(config)).returncode == 0
    run_dir = tmp_path / "runs" / "s"
    export = tmp_path / "e.jsonl"
    rows = exported(run_dir, export)
    scores = {(r["model"], r["item_id"], r["step"]): r.get("score") for r in rows}
    assert scores[("good", "q1", 0)] == 1.0 and scores[("weak", "q1", 0)] == 1.0
    assert scores[("good", "q2", 0)] == 1.0 and scores[("weak", "q2", 0)] == 0.0
    assert scores[("good", "q3", 0)] == 0.0  # "seven" has no number in it
    assert scores[("good", "chat", 1)] == 1.0 and ("good", "chat", 0) not in {
        k for k, v in scores.items() if v is not None
    }
    scored = [r for r in rows if "score" in r]
    assert len(scored) == 16
    assert all(
        r["scorer"]
        == {"name": "number", "version": "1", "options": {"abs_tol": 0.0, "rel_tol": 0.0}}
        for r in scored
    )

    assert tally("report", str(run_dir), "--resamples", "200").returncode == 0
    report = orjson.loads((run_dir / "report.json").read_bytes())["sections"]["prompts"]
    good = report["scores"]["prompts"]["good"]
    assert good["accuracy_ite"]["value"] == 0.75 and good["coverage"]["value"] == 1.0
    assert report["scores"]["prompts"]["weak"]["accuracy_ite"]["value"] == 0.5
    (pair,) = report["paired"]["prompts"]
    assert (pair["a"], pair["b"], pair["items"], pair["value"]) == ("good", "weak", 4, 0.25)
    assert pair["ci_low"] <= 0.25 <= pair["ci_high"]
    assert report["scores_differing_from_export"] == 0
    # Two samples per item: a second interval draws over the (item, sample) calls.
    over = good["over_samples"]["accuracy_ite"]
    assert over["value"] == 0.75 and over["ci_low"] <= 0.75 <= over["ci_high"]
    assert good["accuracy_ite"]["ci_low"] < good["accuracy_ite"]["ci_high"]

    for fmt in ("jsonl", "csv"):
        out = tmp_path / f"again.{fmt}"
        if fmt != "jsonl":
            assert tally("export", str(run_dir), "-o", str(out)).returncode == 0
        graded = tally(
            "grade",
            str(export if fmt == "jsonl" else out),
            "-o",
            str(tmp_path / fmt),
            "--resamples",
            "200",
        )
        assert graded.returncode == 0, graded.stderr
        again = orjson.loads((tmp_path / fmt / "report.json").read_bytes())["sections"]["prompts"]
        assert again == report

    tampered = tmp_path / "t.jsonl"
    first = next(r for r in rows if r.get("score") is not None)
    first["score"] = 1.0 - first["score"]
    lines = [orjson.dumps(r).decode() for r in rows]
    tampered.write_text("\n".join(lines) + "\n")
    graded = tally("grade", str(tampered), "-o", str(tmp_path / "t"), "--resamples", "200")
    assert graded.returncode == 0
    data = orjson.loads((tmp_path / "t" / "report.json").read_bytes())["sections"]["prompts"]
    assert data["scores"] == report["scores"]
    assert data["scores_differing_from_export"] == 1
