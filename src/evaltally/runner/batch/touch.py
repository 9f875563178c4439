"""Where the batch driver meets the synchronous path: one function renders a call, one turns a
model's answer into the call's result, one records an outcome, one proves a recorded step still
renders to its recorded request. Batch calls go through exactly these, so their prompts, parsing,
statuses, counters and failure summaries are the synchronous ones; a change to the scheduler or
benchmark contract is adapted here."""

from __future__ import annotations

from collections.abc import Sequence

from evaltally.benchmarks.base import Benchmark, StepAnswer
from evaltally.ledger import RecordedAnswer
from evaltally.records import Completion, Message, PlannedCall
from evaltally.runner.call import CallResult, LaneUnit, completion_result
from evaltally.runner.scheduler import ChainWork, Scheduler


def render(bench: Benchmark, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
    return bench.render(call, earlier)


def parse(
    bench: Benchmark,
    call: PlannedCall,
    completion: Completion,
    attempts: int,
    latency_ms: float,
    rhash: str,
) -> CallResult:
    return completion_result(bench, call, completion, attempts, latency_ms, rhash)


def record(scheduler: Scheduler, unit: LaneUnit, call: PlannedCall, result: CallResult) -> None:
    scheduler.record(unit, call, result)


def check_recorded(
    scheduler: Scheduler,
    unit: LaneUnit,
    bench: Benchmark,
    call: PlannedCall,
    work: ChainWork,
    recorded: RecordedAnswer,
) -> str | None:
    return scheduler.check_recorded(unit, bench, call, work, recorded)
