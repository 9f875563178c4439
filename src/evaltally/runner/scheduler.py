"""Drive pending chains through their lanes.

Each lane gets `concurrency` workers; a worker takes a whole chain and runs its calls strictly
in order, so chains run concurrently and calls inside a chain never overlap. Chains with the
most remaining calls start first: they are the critical path of the sweep.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from evaltally.benchmarks.base import Benchmark, StepAnswer
from evaltally.ledger import Ledger, PendingChain, RecordedAnswer
from evaltally.records import PlannedCall, Status
from evaltally.runner.call import CallExecutor, CallResult, LaneUnit, request_hash
from evaltally.runner.lane import LaneStopped

BudgetCheck = Callable[[], str | None]
"""Returns a reason when no new call may be sent (budget reached), else None."""


@dataclass
class ChainWork:
    chain: PendingChain
    prior_attempts: Mapping[str, int]

    @property
    def remaining(self) -> int:
        return sum(1 for c in self.chain.calls if c.step not in self.chain.recorded)


class Scheduler:
    def __init__(
        self,
        ledger: Ledger,
        executor: CallExecutor,
        units: Mapping[str, LaneUnit],
        benchmarks: Mapping[str, Benchmark],
        budget: BudgetCheck | None = None,
    ) -> None:
        self.ledger = ledger
        self.executor = executor
        self.units = units
        self.benchmarks = benchmarks
        self.budget = budget
        self.mismatches: list[str] = []
        self.failures: list[str] = []
        """One line per call that ended failed (which call, why), for the end-of-run summary."""

    async def run(self, work: list[ChainWork]) -> None:
        queues: dict[str, deque[ChainWork]] = {key: deque() for key in self.units}
        for item in sorted(work, key=lambda w: (-w.remaining, w.chain.chain_id)):
            queues[item.chain.calls[0].model].append(item)
        async with asyncio.TaskGroup() as group:
            for key, queue in queues.items():
                unit = self.units[key]
                for _ in range(min(unit.model.limits.concurrency, len(queue))):
                    group.create_task(self._worker(unit, queue))

    async def _worker(self, unit: LaneUnit, queue: deque[ChainWork]) -> None:
        while queue:
            await self._run_chain(unit, queue.popleft())

    async def _run_chain(self, unit: LaneUnit, work: ChainWork) -> None:
        chain = work.chain
        bench = self.benchmarks[chain.calls[0].benchmark]
        earlier: list[StepAnswer] = []
        blocked_reason: str | None = None
        for call in chain.calls:
            recorded = chain.recorded.get(call.step)
            if recorded is not None:
                if blocked_reason is None:
                    blocked_reason = self.check_recorded(unit, bench, call, earlier, recorded)
                earlier.append(
                    StepAnswer(call.step, recorded.status, recorded.raw_text, recorded.parsed)
                )
                continue
            reason = blocked_reason or unit.lane.stop_reason or (self.budget and self.budget())
            if reason:
                self.record(unit, call, CallResult(Status.BLOCKED, reason=reason))
                continue
            result = await self._run_call(unit, bench, call, earlier, work)
            self.record(unit, call, result)
            await self.ledger.throttle()
            if result.status is Status.FAILED or result.status is Status.BLOCKED:
                blocked_reason = f"an earlier call of its chain (step {call.step}) did not finish"
            earlier.append(StepAnswer(call.step, result.status, result.raw_text, result.parsed))

    async def _run_call(
        self,
        unit: LaneUnit,
        bench: Benchmark,
        call: PlannedCall,
        earlier: list[StepAnswer],
        work: ChainWork,
    ) -> CallResult:
        messages = bench.render(call, earlier)
        try:
            return await self.executor.run(
                unit, call, messages, bench, work.prior_attempts.get(call.call_id, 0)
            )
        except LaneStopped as stopped:
            return CallResult(Status.BLOCKED, reason=str(stopped))

    def check_recorded(
        self,
        unit: LaneUnit,
        bench: Benchmark,
        call: PlannedCall,
        earlier: list[StepAnswer],
        recorded: RecordedAnswer,
    ) -> str | None:
        """Prove the recorded step's prompt still renders to the same bytes; later steps are
        built on it, so a mismatch means the chain cannot be continued faithfully."""
        stored = recorded.request_hash
        if stored is None:
            return None
        body = self.executor.build_body(unit, bench.render(call, earlier))
        if request_hash(body) == stored:
            return None
        message = (
            f"call {call.call_id} (chain {call.chain_id}, step {call.step}): its prompt no longer "
            "renders to the recorded request; the item data or prompt version changed since it "
            "was answered, so the rest of the chain is blocked"
        )
        self.mismatches.append(message)
        return message

    def record(self, unit: LaneUnit, call: PlannedCall, result: CallResult) -> None:
        self.ledger.outcome(
            call.call_id,
            result.status,
            raw_text=result.raw_text,
            parsed=result.parsed,
            parse_path=result.parse_path,
            reason=result.reason,
            request_hash=result.request_hash,
            attempts=result.attempts,
            usage=result.usage,
            latency_ms=result.latency_ms,
        )
        _count(unit, result)
        if result.status is Status.FAILED:
            self.failures.append(
                f"{call.model} / {call.benchmark} / item {call.item_id!r} step {call.step} "
                f"(call {call.call_id}): {result.reason}"
            )


def _count(unit: LaneUnit, result: CallResult) -> None:
    stats = unit.lane.stats
    stats.done += 1
    setattr(stats, result.status.value, getattr(stats, result.status.value) + 1)
    if result.usage is not None:
        stats.input_tokens += result.usage.input_tokens
        stats.output_tokens += result.usage.output_tokens
        stats.reasoning_tokens += result.usage.reasoning_tokens
        price = unit.model.price
        if price is not None:
            stats.cost_usd += (
                result.usage.input_tokens * price.input_per_mtok
                + result.usage.output_tokens * price.output_per_mtok
            ) / 1e6
