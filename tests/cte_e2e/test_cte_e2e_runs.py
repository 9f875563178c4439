"""Through runner, ledger, export and grade: the demo (kill -9 + resume), Table 1 on Core-v1,
and `tally report` == `tally grade`."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from cte_e2e_kit import CORE_V1, baseline_config

from evaltally.benchmarks.cte.collect import collect
from evaltally.benchmarks.cte.paper_tables import table_1
from evaltally.benchmarks.cte.records import load_scenarios
from evaltally.benchmarks.cte.stats import composition, resolve_data
from evaltally.benchmarks.grading import grade_export
from testkit import tally

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _finished(db: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT count(*) FROM outcomes").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _metric(result_groups: list[dict[str, object]], model: str, protocol: str, name: str) -> float:
    g = next(g for g in result_groups if g["model"] == model and g["protocol"] == protocol)
    return g["summary"]["metrics"][name]["value"]  # type: ignore[index,no-any-return]


def test_demo_kill_resume_report_equals_grade(tmp_path: Path) -> None:
    limit = 12
    config = baseline_config(tmp_path, "demo", "builtin", f"limit = {limit}\n")
    run_dir = tmp_path / "runs" / "demo"
    proc = subprocess.Popen(
        [sys.executable, "-m", "evaltally", "run", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if _finished(run_dir / "ledger.sqlite") > 400:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = tally("resume", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert tally("verify", str(run_dir)).returncode == 0

    rep = tally("report", str(run_dir), "--resamples", "50")
    assert rep.returncode == 0, rep.stderr
    export = tmp_path / "export.jsonl"
    assert tally("export", str(run_dir), "-o", str(export)).returncode == 0
    out = tmp_path / "graded"
    graded = tally("grade", str(export), "-o", str(out), "--resamples", "50")
    assert graded.returncode == 0, graded.stderr
    from_report = orjson.loads((run_dir / "report.json").read_bytes())
    from_grade = orjson.loads((out / "report.json").read_bytes())
    assert from_report["sections"]["cte"]["groups"] == from_grade["sections"]["cte"]["groups"]
    assert (run_dir / "vm_by_index.png").stat().st_size > 1000
    assert "| replay | free_rollout |" in (run_dir / "report.md").read_text()
    # computed on our generated set: no title a reader could take for the paper's Table 1
    md = (run_dir / "report.md").read_text()
    assert "Table 1:" not in md and "Table 1 (Core-v1)" not in md
    assert (
        "Non-model predictors (%) on the built-in generated scenario set, in the layout of the "
        "paper's Table 1 (not the paper's numbers)" in md
    )

    stats = composition(load_scenarios(resolve_data("builtin"))[:limit])
    groups = from_report["sections"]["cte"]["groups"]
    for protocol in ("answers_revealed", "no_feedback", "free_rollout"):
        assert _metric(groups, "replay", protocol, "effect_step_vm") == 0.0
        assert _metric(groups, "replay", protocol, "all_call_vm") == pytest.approx(
            1 - stats["effect_steps"] / stats["scored_calls"], abs=1e-12
        )
        assert _metric(groups, "replay", protocol, "coverage") == 1.0


def test_table1_through_the_runner(tmp_path: Path) -> None:
    config = baseline_config(tmp_path, "t1", str(CORE_V1), 'protocols = ["no_feedback"]\n')
    run = tally("run", str(config), timeout=240)
    assert run.returncode == 0, run.stderr
    export = tmp_path / "t1.jsonl"
    assert tally("export", str(tmp_path / "runs" / "t1"), "-o", str(export)).returncode == 0
    groups = grade_export(export, resamples=0).section("cte")["groups"]
    measured = {
        m: tuple(
            round(100 * _metric(groups, m, "no_feedback", k), 1)
            for k in ("all_call_vm", "effect_step_vm", "status_match")
        )
        for m in ("replay", "copy_last", "majority_status")
    }
    assert measured == {
        "replay": (75.7, 0.0, 91.6),
        "copy_last": (1.5, 1.1, 72.3),
        "majority_status": (0.0, 0.0, 76.8),
    }
    c = collect(export)
    assert sum(len(v) for v in c.groups.values()) == 3 * 10_200
    rows = [orjson.loads(x) for x in export.read_bytes().splitlines()[:1]]
    assert rows[0]["prompt_version"] == "cte-v3" and "target" in rows[0]
    assert rows[0]["scenario_source"] == "core-v1"
    title = table_1(groups, labelled=False)
    assert title is not None and title.title == "Table 1 (Core-v1): non-model predictors (%)"
