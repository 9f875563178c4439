"""One call, everything the ledger knows about it: its export row, every attempt with its
bodies, its outcome history, its chain, the benchmark's oracle fields, and where the chain's own
earlier answers entered its prompt."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from evaltally.benchmarks.base import StepAnswer
from evaltally.ledger.bodies import unpack
from evaltally.ledger.browse import (
    attempt_rows,
    chain_steps,
    final_answers_before,
    outcome_history,
)
from evaltally.ledger.export import call_record
from evaltally.ledger.verifications import call_verdict
from evaltally.records import PlannedCall, Status
from evaltally.view.messages import Shown, messages_from_body, pretty_body
from evaltally.view.runs import ViewRun

# Bodies larger than this are cut in the page (the ledger keeps them whole).
BODY_LIMIT = 200_000
_USAGE = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens")


def call_detail(run: ViewRun, call_id: str) -> dict[str, Any] | None:
    with run.read(f"read call {call_id}") as conn:
        record = call_record(conn, call_id)
        if record is None:
            return None
        attempts, request = _attempts(conn, call_id)
        history = [
            {"status": s, "reason": r, "at": at, "attempts": n}
            for s, r, at, n in outcome_history(conn, call_id)
        ]
        chain = [
            {"step": step, "call_id": cid, "status": status or "unfinished"}
            for cid, step, status in chain_steps(conn, record["chain_id"])
        ]
        earlier = _earlier_answers(conn, record["chain_id"], record["step"])
        verdict = call_verdict(conn, call_id)
    if verdict is not None:
        record["verification"] = verdict
    call = PlannedCall(
        **{k: record[k] for k in ("call_id", "chain_id", "step", "model", "benchmark")},
        item_id=record["item_id"],
        sample=record["sample"],
        protocol=record["protocol"],
        spec=record["spec"],
    )
    detail: dict[str, Any] = {
        "record": record,
        "attempts": attempts,
        "outcomes": history,
        "chain": chain,
        "request": request,
        "oracle": None,
        "oracle_note": run.config_note,
        "fed_back": [],
    }
    bench = run.benchmark(call.benchmark)
    if bench is not None:
        detail["oracle"] = dict(bench.export_fields(call))
        shown = bench.shown_answers(call, earlier)
        ids = {c["step"]: c["call_id"] for c in chain}
        detail["fed_back"] = [
            {"step": step, "call_id": ids.get(step), "text": text} for step, text in shown.items()
        ]
        if request["messages"] is not None:
            request["messages"] = [mark(m, shown) for m in request["messages"]]
    elif run.config_note is None:
        detail["oracle_note"] = f"benchmark {call.benchmark!r} is not in the run's config"
    return detail


def _attempts(conn: sqlite3.Connection, call_id: str) -> tuple[list[dict[str, Any]], Any]:
    by_number: dict[int, dict[str, Any]] = {}
    last_body: bytes | None = None
    for row in attempt_rows(conn, call_id):
        number, kind, at, rhash, req, status, eclass, detail, retry, resp = row[:10]
        entry = by_number.setdefault(number, {"attempt": number, "state": "in flight"})
        if kind == "start":
            entry.update(started_at=at, request_hash=rhash)
            if req is not None:
                last_body = unpack(req)
            continue
        usage = dict(zip(_USAGE, row[10:14], strict=True)) if row[10] is not None else None
        entry.update(
            state="interrupted" if kind == "interrupted" else "error" if eclass else "answered",
            ended_at=at,
            http_status=status,
            error_class=eclass,
            error_detail=detail,
            retry_after_s=retry,
            latency_ms=row[14],
            request_id=row[15],
            usage=usage,
        )
        if resp is not None:
            entry["response"], entry["response_cut"] = pretty_body(unpack(resp), BODY_LIMIT)
    request: dict[str, Any] = {"messages": None, "raw": None, "raw_cut": False}
    if last_body is not None:
        found = messages_from_body(last_body)
        request["messages"] = None if found is None else [_parts(m) for m in found]
        request["raw"], request["raw_cut"] = pretty_body(last_body, BODY_LIMIT)
    return list(by_number.values()), request


def _earlier_answers(conn: sqlite3.Connection, chain_id: str, step: int) -> list[StepAnswer]:
    """The final answers of the chain's earlier steps, as the prompt of `step` was rendered
    from (a step without one ends the list: later steps never ran past it)."""
    answers: list[StepAnswer] = []
    for s, status, raw, parsed in final_answers_before(conn, chain_id, step):
        if s != len(answers):
            if s < len(answers):
                continue  # a second final outcome of the same step: the first one counts
            break
        answers.append(StepAnswer(s, Status(status), raw, orjson.loads(parsed)))
    return answers


def mark(message: dict[str, Any], shown: dict[int, str]) -> dict[str, Any]:
    """Split a message's text into parts, tagging each earlier answer found in it with its
    step, so the page can show where the model's own answers entered the prompt.

    Later steps are placed first, each at the last untagged occurrence of its text: answers
    enter a prompt in step order after everything else (the same line may also appear earlier,
    as an observed call or as another step's identical answer)."""
    parts: list[dict[str, Any]] = message["parts"]
    for step, text in sorted(shown.items(), reverse=True):
        for k in range(len(parts) - 1, -1, -1):
            part = parts[k]
            if not text or "step" in part or text not in part["text"]:
                continue
            before, _, after = part["text"].rpartition(text)
            pieces = ({"text": before}, {"text": text, "step": step}, {"text": after})
            parts[k : k + 1] = [p for p in pieces if p["text"]]
            break
    return {"role": message["role"], "parts": parts}


def _parts(message: Shown) -> dict[str, Any]:
    return {"role": message["role"], "parts": [{"text": message["content"]}]}
