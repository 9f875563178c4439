"""Batch result documents from a hostile provider (issue 23, items 2 and 3).

Item 2: Gemini results that echo no request key were matched by position even with a line
missing, so answers landed on the wrong calls and `verify` passed. Now only an echoed key
attaches a result, or the position when every request has exactly one answer; otherwise those
calls are sent again. Item 3: one result line with a `custom_id` that is a list, a status code
or a token count like "²" or above 2^64 raised a traceback that every resume repeated."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from hostile_batch import BatchProvider, Request, batch_config, result, run_batch
from hostile_server import HostileServer
from ledger_hostile_kit import append_attempt, append_ok

from testkit import tally


def export(config: Path) -> dict[str, dict[str, Any]]:
    out = config.parent / "export.jsonl"
    done = run_batch(config, "-o", str(out), "--force", command="export")
    assert done.returncode == 0, done.stderr
    return {row["item_id"]: row for row in map(orjson.loads, out.read_bytes().splitlines())}


def test_gemini_results_without_keys_are_never_matched_by_guess(tmp_path: Path) -> None:
    sizes: dict[int, int] = {}

    def lines(requests: list[Request]) -> list[Any]:
        sizes[provider.created] = len(requests)
        answers = [result("gemini", call_id, f"answer to {q}") for call_id, q in requests]
        if provider.created > 1:
            return answers  # a later batch echoes every key
        for answer in answers:
            del answer["metadata"]
        return answers[:1] + answers[2:]  # the second request's answer is missing

    provider = BatchProvider("gemini", lines)
    with HostileServer(provider) as server:
        config = batch_config(tmp_path, server.base_url, "gemini", items=4)
        done = run_batch(config)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sizes == {1: 4, 2: 4}  # nothing attached from batch 1: every call is sent again
    rows = export(config)
    for item, row in rows.items():
        assert row["status"] == "ok" and row["raw_text"] == f"answer to question {item[1:]}", row
    verified = run_batch(config, command="verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # A line naming another call, recorded as this call's answer, is caught by verify.
    run_dir = config.parent / "runs" / "hb"
    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    (q0,) = conn.execute("SELECT call_id FROM planned WHERE item_id = 'q0'").fetchone()
    line = orjson.dumps(result("gemini", rows["q1"]["call_id"], "answer to question 1"))
    append_ok(
        conn, q0, "answer to question 1", request_hash=append_attempt(conn, q0, response=line)
    )
    conn.commit()
    conn.close()
    verified = run_batch(config, command="verify")
    assert verified.returncode == 4, verified.stderr
    assert "recorded for the wrong call" in verified.stdout + verified.stderr, verified.stderr


def _hostile_lines(kind: str) -> Any:
    """question 0's line names its call by a list; question 2's has a status of no shape."""

    def line(call_id: str, question: str) -> dict[str, Any]:
        out = result(kind, call_id, f"answer to {question}")
        if question == "question 0":
            if kind == "gemini":
                out["metadata"]["key"] = [call_id]
            else:
                out["custom_id"] = [call_id]
        elif question == "question 2":
            if kind == "gemini":
                out["error"] = {"code": "²", "message": "odd"}
                del out["response"]
            elif kind == "openai":
                out["response"]["status_code"] = "²"
            else:
                out["result"] = {"type": "errored", "error": ["not", "a", "dict"]}
        return out

    return lambda requests: [line(call_id, q) for call_id, q in requests]


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_malformed_result_lines_fail_their_call_and_the_run_goes_on(
    tmp_path: Path, kind: str
) -> None:
    stats = {"batchStats": {"requestCount": "²", "successfulRequestCount": str(2**64 + 1)}}
    provider = BatchProvider(kind, _hostile_lines(kind), status_extra=stats)
    with HostileServer(provider) as server:
        config = batch_config(tmp_path, server.base_url, kind, items=3)
        done = run_batch(config)
        assert "Traceback" not in done.stderr, done.stderr
        resumed = run_batch(config, command="resume")
        assert "Traceback" not in resumed.stderr, resumed.stderr
    rows = export(config)
    assert rows["q1"]["status"] == "ok" and rows["q1"]["raw_text"] == "answer to question 1"
    assert rows["q0"]["status"] == "failed"
    expected = "no usable request key" if kind == "gemini" else "custom_id is a list"
    assert expected in rows["q0"]["reason"], rows["q0"]["reason"]
    assert rows["q2"]["status"] == "failed", rows["q2"]
    run_dir = config.parent / "runs" / "hb"
    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    details = [d for (d,) in conn.execute("SELECT error_detail FROM attempts WHERE kind = 'end'")]
    conn.close()
    assert any(expected in (d or "") for d in details)
    assert tally("verify", str(run_dir)).returncode == 0
