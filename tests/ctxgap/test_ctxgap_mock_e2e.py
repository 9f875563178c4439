"""A scripted observer and a scripted judge, each on its own mock provider process, run the
example set end to end: a clean run; then a run killed (-9) while chains sit between their
observer's and their judge's step, resumed, and checked call by call (one final outcome per
planned call, no recorded answer sent again, the same export as the clean run); what the
ledger says was sent to the observer holds nothing but the question and the view, and the
judge was never sent the view; the report's numbers are what the scripts imply."""

from __future__ import annotations

import hashlib
import sqlite3
from fractions import Fraction as F
from pathlib import Path
from typing import Any

import orjson
import pytest
from ctxgap_kit import SECRET_KEYS, accuracy, keys, leaks, write_sweep

from evaltally.benchmarks.ctxgap.data import Probe, View, load_dataset
from evaltally.ledger import unpack_body
from evaltally.prompts.ctxgap import NOT_IN_DOCUMENT, render_judge, render_observer
from testkit import kill_run_when, mock_model, tally

VOLATILE = {"latency_ms", "attempts"}
UNITS = 98
BLANK = ("t1-cp1-route", "U")
"""The one unit the observer answers with blanks (an empty answer)."""
UNDECIDED_Q = "What request limit did the user ask for"
HALF_Q = "Where will the limiter keep its state"


def _prompt(unit: tuple[str, str]) -> str:
    ds = load_dataset("example")
    p = next(p for p in ds.probes if p.probe_id == unit[0])
    v = ds.views[(p.task_id, p.checkpoint)][unit[1]]
    return render_observer(question=p.question, view_text=v.text)[-1]["content"]


def observer_script() -> list[dict[str, str]]:
    """Unscripted requests get the mock's generated answer, different for every request, so
    every judge request differs too and the mock's per-body counters count calls."""
    blank = hashlib.sha256(_prompt(BLANK).encode()).hexdigest()
    return [{"sha256": blank, "answer": "   "}, {"match": "## Report", "answer": NOT_IN_DOCUMENT}]


JUDGE_SCRIPT = [
    {"match": f"<answer>\n{NOT_IN_DOCUMENT}\n</answer>", "answer": "Unavailable.\nVERDICT: 0"},
    {"match": UNDECIDED_Q, "answer": "I cannot decide between the two."},
    {"match": HALF_Q, "answer": "Partly right.\nVERDICT: 0.5"},
    {"answer": "Correct.\nVERDICT: 1"},
]


def observer_says(p: Probe, v: View) -> str:
    """What the observer script answers ("generated": the mock's own answer)."""
    if (p.probe_id, v.name) == BLANK:
        return "   "
    return NOT_IN_DOCUMENT if "## Report" in v.text else "generated"


def score(p: Probe, v: View) -> F:
    """The unit's score under intention-to-evaluate, from the two scripts."""
    answer = observer_says(p, v).strip()
    if not answer or answer == NOT_IN_DOCUMENT or UNDECIDED_Q in p.question:
        return F(0)  # empty answer, VERDICT 0, or an unparseable verdict
    return F(1, 2) if HALF_Q in p.question else F(1)


def _script(path: Path, lines: list[dict[str, str]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def _config(tmp_path: Path, name: str, observer_url: str, judge_url: str) -> Path:
    models = mock_model("observer", observer_url, "concurrency = 4") + mock_model(
        "judge", judge_url, "concurrency = 3\nrpm = 6000"
    )
    return write_sweep(
        tmp_path, models=models, observers=("observer",), judges=("judge",), name=name
    )


def _query(db_path: Path, sql: str) -> list[Any]:
    if not db_path.exists():
        return []
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            return db.execute(sql).fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return []


FINAL = "o.status IN ('ok', 'parse_error')"


def _between_steps(db_path: Path) -> tuple[int, int]:
    """(judge steps with a final outcome, chains whose observer answered and judge did not)."""
    rows = _query(
        db_path,
        f"SELECT p.chain_id, p.step FROM outcomes o JOIN planned p USING (call_id) WHERE {FINAL}",
    )
    done: dict[str, set[int]] = {}
    for chain, step in rows:
        done.setdefault(chain, set()).add(step)
    judged = sum(1 in steps for steps in done.values())
    return judged, sum(steps == {0} for steps in done.values())


def _export(run_dir: Path, out: Path) -> list[dict[str, Any]]:
    result = tally("export", str(run_dir), "-o", str(out))
    assert result.returncode == 0, result.stderr
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]


def _stable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]


def _kill_between_steps(config: Path, run_dir: Path) -> None:
    def ready() -> bool:
        judged, waiting = _between_steps(run_dir / "ledger.sqlite")
        return judged >= 6 and waiting >= 3

    kill_run_when(config, ready)


def _sent(db_path: Path, step: int) -> list[tuple[str, str, dict[str, Any]]]:
    """(item, view, request body) of every attempt sent for `step`."""
    rows = _query(
        db_path,
        "SELECT p.item_id, p.protocol, a.request_body FROM attempts a JOIN planned p "
        f"USING (call_id) WHERE a.kind = 'start' AND p.step = {step}",
    )
    return [(item, view, orjson.loads(unpack_body(body))) for item, view, body in rows]


def _check_what_was_sent(run_dir: Path, tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    ds = load_dataset("example")
    probes = {p.probe_id: p for p in ds.probes}
    inputs = tmp_path / "observer-inputs.jsonl"
    made = tally("ctxgap", "export-observer-inputs", "--run", str(run_dir), "-o", str(inputs))
    assert made.returncode == 0, made.stderr
    shown = {
        (r["probe_id"], r["view"]): r for r in map(orjson.loads, inputs.read_bytes().splitlines())
    }
    assert len(shown) == UNITS
    db = run_dir / "ledger.sqlite"
    observed = _sent(db, 0)
    assert {(item, view) for item, view, _ in observed} == set(shown)
    for item, view, body in observed:
        row = shown[(item, view)]
        assert body["messages"] == row["messages"]  # exactly what the export says they see
        assert leaks(row, ds) == []
        assert not keys(body) & SECRET_KEYS and "VERDICT" not in str(body)
    answers = {(r["item_id"], r["protocol"]): r["raw_text"] for r in rows if r["step"] == 0}
    judged = _sent(db, 1)
    assert len({(item, view) for item, view, _ in judged}) == UNITS
    for item, view, body in judged:
        p = probes[item]
        text = ds.views[(p.task_id, p.checkpoint)][view].text
        expected = render_judge(
            question=p.question, reference=p.reference, answer=answers[(item, view)].strip()
        )
        assert body["messages"] == expected
        assert text not in str(body) and "view" not in keys(body)


def _check_numbers(run_dir: Path, tmp_path: Path, export: Path) -> None:
    report = tally("report", str(run_dir))
    assert report.returncode == 0, report.stderr
    doc = orjson.loads((run_dir / "report.json").read_bytes())
    graded = tally("grade", str(export), "-o", str(tmp_path / "graded"))
    assert graded.returncode == 0, graded.stderr
    again = orjson.loads((tmp_path / "graded" / "report.json").read_bytes())
    assert again["sections"] == doc["sections"]
    ((binding,),) = [b["bindings"] for b in doc["sections"]["ctxgap"]["benchmarks"]]
    assert (binding["observer_model"], binding["judge_model"]) == ("observer", "judge")
    ds = load_dataset("example")
    gap = binding["gap"]
    for v in ("U", "T_full"):
        want = accuracy(ds, ("U", "T_full"), v, score)
        assert gap["accuracy"][v]["value"] == pytest.approx(float(want))
    for one in binding["by_view"]:
        (v,) = one["views"]
        assert one["accuracy"][v]["value"] == pytest.approx(float(accuracy(ds, (v,), v, score)))
        assert one["outcomes"][v] == expected_outcomes(v)


def expected_outcomes(view: str) -> dict[str, int]:
    """Outcome counts of `view`'s units, from the scripts."""
    counts = dict.fromkeys(("scored", "empty_answer", "invalid_verdict", "failed", "missing"), 0)
    for p, v in load_dataset("example").planned():
        if v.name != view:
            continue
        answer = observer_says(p, v).strip()
        if not answer:
            counts["empty_answer"] += 1
        elif UNDECIDED_Q in p.question and answer != NOT_IN_DOCUMENT:
            counts["invalid_verdict"] += 1
        else:
            counts["scored"] += 1
    return counts


def test_scripted_observer_and_judge_on_two_endpoints_kill_between_steps_and_resume(
    tmp_path: Path, mock_process: Any
) -> None:
    observer_answers = str(_script(tmp_path / "o.jsonl", observer_script()))
    judge_answers = str(_script(tmp_path / "j.jsonl", JUDGE_SCRIPT))
    observer = mock_process("--latency-ms", "20", "--answers-file", observer_answers)
    judge = mock_process("--latency-ms", "120", "--answers-file", judge_answers)
    clean = tally("run", str(_config(tmp_path, "clean", observer.base_url, judge.base_url)))
    assert clean.returncode == 0, clean.stderr
    rows = _export(tmp_path / "runs" / "clean", tmp_path / "clean.jsonl")
    assert len(rows) == 2 * UNITS and len({r["request_hash"] for r in rows}) == 2 * UNITS
    assert observer.stats()["by_model"] == {"observer-model": UNITS}
    assert judge.stats()["by_model"] == {"judge-model": UNITS}

    observer.reset_stats()
    judge.reset_stats()
    run_dir = tmp_path / "runs" / "killed"
    _kill_between_steps(_config(tmp_path, "killed", observer.base_url, judge.base_url), run_dir)
    db = run_dir / "ledger.sqlite"
    judged, waiting = _between_steps(db)
    assert judged < UNITS and waiting > 0, "the kill did not land between two steps of a chain"
    recorded = dict(_query(db, f"SELECT o.call_id, o.request_hash FROM outcomes o WHERE {FINAL}"))

    resumed = tally("resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    assert tally("verify", str(run_dir)).returncode == 0
    per_call = _query(db, "SELECT call_id, count(*) FROM outcomes GROUP BY call_id")
    assert len(per_call) == 2 * UNITS and {n for _, n in per_call} == {1}
    export = tmp_path / "killed.jsonl"
    assert _stable(_export(run_dir, export)) == _stable(rows)
    # No answer recorded before the kill was asked for again, at either endpoint.
    bodies = {**observer.stats()["by_body"], **judge.stats()["by_body"]}
    assert recorded and all(bodies.get(h) == 1 for h in recorded.values())

    _check_what_was_sent(run_dir, tmp_path, rows)
    _check_numbers(run_dir, tmp_path, export)
