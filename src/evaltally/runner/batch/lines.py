"""A batch result line becomes its call's attempt and, once the call is settled, its outcome.

The line is read by the synchronous adapter (`parse_response`), so it is classified exactly as a
synchronous answer would be: a completion is parsed by the benchmark (ok or parse_error), a 400
fails the call, a 401/403 stops the lane, a 429/5xx or a line the batch never ran (expired,
cancelled, missing) is retried in a later round until the lane's max_attempts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import cast

from evaltally.adapters.base import HttpAdapter, HttpResponse
from evaltally.adapters.batch.base import LineResult
from evaltally.ledger import Ledger
from evaltally.records import AttemptError, Completion, ErrorAction, PlannedCall, Status
from evaltally.runner.batch.control import stop_lane
from evaltally.runner.batch.lifecycle import Batch, Member
from evaltally.runner.call import CallResult, LaneUnit, completion_result

Record = Callable[[PlannedCall, CallResult], None]


class LineRecorder:
    def __init__(self, unit: LaneUnit, ledger: Ledger, record: Record) -> None:
        self.unit = unit
        self.ledger = ledger
        self.record = record
        self.sync = cast(HttpAdapter, unit.adapter)

    def apply(self, batch: Batch, member: Member, line: LineResult | AttemptError) -> str:
        """Record the member's attempt end (and outcome); "answered", "failed" or "retry"."""
        latency_ms = max(0.0, time.time() - batch.started) * 1000.0
        raw: bytes | None = None
        http_status: int | None = None
        result: Completion | AttemptError
        if isinstance(line, LineResult):
            raw = line.raw
            if isinstance(line.outcome, HttpResponse):
                http_status = line.outcome.status
                result = self.sync.parse_response(line.outcome)
            else:
                result = line.outcome
        else:
            result = line
        completion = result if isinstance(result, Completion) else None
        error = result if isinstance(result, AttemptError) else None
        self.ledger.attempt_finished(
            member.call.call_id,
            member.attempt,
            http_status=http_status,
            error_class=error.error_class if error else None,
            error_detail=error.detail if error else None,
            retry_after_s=None,
            response_body=raw,
            usage=completion.usage if completion else None,
            latency_ms=latency_ms,
            request_id=completion.request_id if completion else None,
        )
        self.unit.lane.stats.in_flight -= 1
        if completion is not None:
            self._settle(member, completion, latency_ms)
            return "answered"
        assert error is not None
        return self._failed(member, error)

    def _settle(self, member: Member, completion: Completion, latency_ms: float) -> None:
        cursor = member.cursor
        if cursor is None:
            return
        attempts = max(1, cursor.sent[member.call.call_id])
        result = completion_result(
            cursor.bench, member.call, completion, attempts, latency_ms, member.rhash
        )
        cursor.finish(member.call, result, self.record)

    def _failed(self, member: Member, error: AttemptError) -> str:
        cursor = member.cursor
        if error.action is ErrorAction.STOP_LANE:
            stop_lane(self.unit, error)
        reason = f"{error.error_class}: {error.detail}"
        sent = max(1, cursor.sent[member.call.call_id]) if cursor else 1
        if error.action is ErrorAction.RETRY:
            if sent < self.unit.model.limits.max_attempts:
                member.retry = True
                return "retry"
            reason = f"gave up after {sent} attempts; last: {reason}"
        if cursor is not None:
            failed = CallResult(
                Status.FAILED, reason=reason, attempts=sent, request_hash=member.rhash
            )
            cursor.finish(member.call, failed, self.record)
        return "failed"
