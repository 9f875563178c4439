"""Shared helpers for the ledger tests (imported by the test_ledger_* modules)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from evaltally.ledger import Ledger
from evaltally.records import PlannedCall, Status, Usage


def calls(
    chains: int, steps: int = 1, *, model: str = "m1", bench: str = "b1"
) -> list[PlannedCall]:
    return list(iter_calls(chains, steps, model=model, bench=bench))


def iter_calls(
    chains: int, steps: int = 1, *, model: str = "m1", bench: str = "b1"
) -> Iterator[PlannedCall]:
    for c in range(chains):
        for s in range(steps):
            yield PlannedCall(
                call_id=f"{model}-{bench}-{c:04d}-{s}",
                chain_id=f"{model}-{bench}-{c:04d}",
                step=s,
                model=model,
                benchmark=bench,
                item_id=f"item{c}",
                sample=0,
                protocol="p",
                spec={"item": f"item{c}", "step": s},
            )


def body(call_id: str) -> tuple[bytes, str]:
    raw = f'{{"call": "{call_id}"}}'.encode()
    return raw, hashlib.sha256(raw).hexdigest()


def answer(
    ledger: Ledger, call_id: str, status: Status = Status.OK, *, attempt: int = 1, http: int = 200
) -> None:
    """One attempt (start + end) and an outcome, as the runner records them."""
    raw, h = body(call_id)
    ledger.attempt_started(call_id, attempt, h, raw)
    finish(ledger, call_id, status, attempt=attempt, http=http)


def finish(
    ledger: Ledger, call_id: str, status: Status = Status.OK, *, attempt: int = 1, http: int = 200
) -> None:
    """The end of a started attempt and the call's outcome."""
    _, h = body(call_id)
    ledger.attempt_finished(
        call_id,
        attempt,
        http_status=http,
        error_class=None if http == 200 else f"http_{http}",
        error_detail=None,
        retry_after_s=None,
        response_body=b'{"choices": [{"message": {"content": "42"}}]}',
        usage=Usage(10, 3, 1),
        latency_ms=12,
        request_id="req-1",
    )
    text = "42" if status is not Status.FAILED else None
    ledger.outcome(
        call_id,
        status,
        raw_text=text,
        parsed=42 if status is Status.OK else None,
        parse_path="json" if status is Status.OK else None,
        reason=None if status.is_final else "gave up",
        request_hash=h,
        attempts=attempt,
        usage=Usage(10, 3, 1),
        latency_ms=12.5,
    )


async def new_run(tmp: Path, plan: list[PlannedCall]) -> Ledger:
    ledger = await Ledger.open(tmp / "run", create=True, command="pytest")
    await ledger.reconcile_plan(plan)
    return ledger


def answer_in_batch(ledger: Ledger, call_ids: list[str], key: str = "b-test") -> None:
    """Calls answered through one batch, recorded as the batch driver records them."""
    book = ledger.batch_book()
    book.planned(key, "m1", 1, "openai", [(c, 1) for c in call_ids], b'{"batch": 1}\n')
    for call_id in call_ids:
        raw, h = body(call_id)
        ledger.attempt_started(call_id, 1, h, raw)
    book.event(key, "created", provider_id="batch_test")
    for call_id in call_ids:
        finish(ledger, call_id)
    book.event(key, "closed", state="completed", counts={"answered": len(call_ids)})
