"""Export rows and determinism; status counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from ledger_testkit import answer, body, calls, new_run

from evaltally.errors import LedgerError
from evaltally.ledger import SCHEMA_VERSION, ExportRow, export_run, run_status
from evaltally.records import Status

FIELDS = [
    "schema_version", "call_id", "chain_id", "step", "model", "benchmark", "protocol",
    "item_id", "sample", "spec", "status", "attempts", "raw_text", "parsed", "parse_path",
    "usage", "latency_ms", "request_hash", "reason",
]  # fmt: skip


async def mixed_run(tmp_path: Path) -> Path:
    # Planned in an order unlike the export order, across two models and two benchmarks.
    plan = calls(2, 2, model="zeta", bench="b2") + calls(2, 2, model="alpha", bench="b1")
    plan += calls(1, 1, model="alpha", bench="a0")
    async with await new_run(tmp_path, plan) as ledger:
        answer(ledger, "alpha-b1-0000-0")
        answer(ledger, "alpha-b1-0000-1", Status.PARSE_ERROR)
        answer(ledger, "alpha-b1-0001-0", Status.FAILED, http=503)
        answer(ledger, "alpha-b1-0001-0", Status.OK, attempt=2)  # resumed and answered
        answer(ledger, "zeta-b2-0000-0", Status.FAILED, http=503)
        ledger.outcome(
            "zeta-b2-0000-1", Status.BLOCKED, raw_text=None, parsed=None, parse_path=None,
            reason="step 0 failed", request_hash=None, attempts=0, usage=None, latency_ms=None,
        )  # fmt: skip
    return tmp_path / "run"


def rows(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


async def test_export_rows_fields_and_order(tmp_path: Path) -> None:
    run = await mixed_run(tmp_path)
    out = tmp_path / "export.jsonl"
    assert export_run(run, out) == 9
    got = rows(out)
    assert [list(r) for r in got] == [FIELDS] * 9
    keys = [(r["model"], r["benchmark"], r["protocol"], r["chain_id"], r["step"]) for r in got]
    assert keys == sorted(keys)
    by_id = {r["call_id"]: r for r in got}
    ok = by_id["alpha-b1-0000-0"]
    assert ok["status"] == "ok" and ok["parsed"] == 42 and ok["raw_text"] == "42"
    assert ok["usage"] == {
        "input_tokens": 10, "output_tokens": 3, "reasoning_tokens": 1, "cached_tokens": 0,
    }  # fmt: skip
    assert ok["attempts"] == 1 and ok["latency_ms"] == 12.5
    assert ok["request_hash"] == body("alpha-b1-0000-0")[1] and ok["parse_path"] == "json"
    assert ok["spec"] == {"item": "item0", "step": 0} and ok["schema_version"] == 1
    assert by_id["alpha-b1-0000-1"]["status"] == "parse_error"
    retried = by_id["alpha-b1-0001-0"]
    assert retried["status"] == "ok" and retried["attempts"] == 2  # latest outcome wins
    blocked = by_id["zeta-b2-0000-1"]
    assert blocked["status"] == "blocked" and blocked["reason"] == "step 0 failed"
    assert blocked["attempts"] == 0 and blocked["usage"] is None
    unfinished = by_id["zeta-b2-0001-0"]
    assert unfinished["status"] == "unfinished" and unfinished["raw_text"] is None


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


async def test_export_is_deterministic_and_enriched(tmp_path: Path) -> None:
    run = await mixed_run(tmp_path)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    export_run(run, a)
    export_run(run, b)
    assert a.read_bytes() == b.read_bytes()

    def oracle(row: ExportRow) -> dict[str, Any]:
        return {"target": row["spec"]["item"], "correct": row["parsed"] == 42}

    export_run(run, b, enrich=oracle)
    enriched = rows(b)
    assert all(r["target"].startswith("item") for r in enriched)
    assert [r["call_id"] for r in enriched] == [r["call_id"] for r in rows(a)]
    with pytest.raises(LedgerError, match=r"overwrite ledger field\(s\) \['status'\]"):
        export_run(run, b, enrich=lambda row: {"status": "x"})
    assert rows(b) == enriched  # a failed export leaves the previous file as it was
    assert leftovers(tmp_path) == []


async def test_status_counts(tmp_path: Path) -> None:
    run = await mixed_run(tmp_path)
    st = run_status(run)
    o = st.overall
    assert (o.planned, o.ok, o.parse_error, o.failed, o.blocked, o.unfinished) == (
        9, 2, 1, 1, 1, 4,
    )  # fmt: skip
    assert st.by_model["alpha"].planned == 5 and st.by_model["alpha"].ok == 2
    assert st.by_model["zeta"].failed == 1 and st.by_model["zeta"].unfinished == 2
    assert st.by_benchmark["a0"].unfinished == 1 and st.by_benchmark["b1"].final == 3
    assert (st.attempts, st.retried_attempts, st.interrupted_attempts) == (5, 1, 0)
    assert (st.input_tokens, st.output_tokens, st.reasoning_tokens) == (50, 15, 5)
    assert st.sessions == 1 and st.live is None and st.schema_version == SCHEMA_VERSION
    assert json.loads(json.dumps(st.as_dict()))["overall"]["ok"] == 2


async def test_status_of_an_empty_ledger(tmp_path: Path) -> None:
    ledger = await new_run(tmp_path, [])
    try:
        st = run_status(tmp_path / "run")
        assert st.overall.planned == 0 and st.live is not None
    finally:
        await ledger.close()
    assert export_run(tmp_path / "run", tmp_path / "e.jsonl") == 0
