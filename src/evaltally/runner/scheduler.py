"""Drive pending chains through the lanes of their steps' models.

A lane (one endpoint) has `concurrency` slots; each slot is a worker that takes the next chain
waiting for this lane and runs its steps strictly in order for as long as they are answered on
this lane. When the chain's next step belongs to another model's lane (an observer answered,
its judge is next), the chain is handed to that lane's queue and the slot takes the next chain.
So calls inside a chain never overlap, every step waits only for its own endpoint, and one slow
or failing endpoint never holds a slot of another. Chains already started come first on a
lane; then chains with the most remaining calls (the critical path of the sweep) within each
batch the pending stream delivers (runner/feed.py keeps a bounded window of chains in memory).

A call waiting out its own retry (a Retry-After, a backoff) lends its slot: the lane starts
another slot meanwhile, so a sporadic error delays its own request, not `concurrency` of the
lane's. Requests still leave only with a ticket of the lane (runner/lane.py), which keeps at
most `concurrency` in flight, so the waiting call, once awake, takes its turn as any request
does; the slots above what is allowed retire as they finish their chains.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from evaltally.benchmarks.base import Benchmark, StepAnswer
from evaltally.errors import EvaltallyError
from evaltally.ledger import Ledger, PendingChain, PendingCount, RecordedAnswer, request_hash
from evaltally.ledger.pending import BATCH_CALLS
from evaltally.records import PlannedCall, Status
from evaltally.runner.call import CallExecutor, CallResult, LaneUnit, request_body
from evaltally.runner.feed import Feed
from evaltally.runner.lane import Lane, LaneStopped

BudgetCheck = Callable[[], str | None]
"""Returns a reason when no new call may be sent (budget reached), else None."""
AnswerHook = Callable[[Benchmark, PlannedCall, StepAnswer], None]
"""Called with every answer that ended ok (the verification hook)."""
KEPT_FAILURES = 10
"""Failed calls whose line is kept for the end-of-run summary; the rest are only counted (a
sweep against an endpoint that fails every call would otherwise hold a line per call)."""


@dataclass
class ChainWork:
    chain: PendingChain
    prior_attempts: Mapping[str, int]
    position: int = 0
    """Index of the next call of `chain.calls` to handle."""
    earlier: list[StepAnswer] = field(default_factory=list)
    known_since: list[float] = field(default_factory=list)
    """Per entry of `earlier`, the ledger row of its outcome (inf: answered this session)."""
    blocked_reason: str | None = None

    def as_seen_by(self, recorded: RecordedAnswer) -> list[StepAnswer]:
        """The earlier answers as they stood when `recorded` was sent: an answer recorded
        after it was then still the failed step it replaced (on_failed_step = "continue")."""
        return [
            a if at < recorded.seq else StepAnswer(a.step, Status.FAILED, None, None)
            for a, at in zip(self.earlier, self.known_since, strict=True)
        ]

    @property
    def remaining(self) -> int:
        return sum(1 for c in self.chain.calls if c.step not in self.chain.recorded)


class _LaneQueue:
    """The chains whose next step waits for one lane."""

    def __init__(self, lane: Lane) -> None:
        self.lane = lane
        self.fresh: deque[ChainWork] = deque()
        self.handed: deque[ChainWork] = deque()
        self.ready = asyncio.Event()
        self.reach = 0
        """Chains with a step still to send on this lane: more slots than that would idle."""
        self.slots = 0
        """Slot tasks running on this lane."""
        self.lent = 0
        """Calls of this lane waiting out their own retry, their slot lent meanwhile."""

    @property
    def allowed(self) -> int:
        """Slots this lane may run now: `concurrency`, plus one per call waiting out its own
        retry, up to twice `concurrency` (and never more than it has chains to run). The
        bound: at most `concurrency` requests are out at once, so that many lent slots cover
        all of them failing together; a lane with more waiting has errors coming faster than
        their waits end (a burst, which may slow the lane), and each slot beyond would only
        start one more chain to hold in memory and to compete for the same tickets."""
        concurrency = self.lane.limits.concurrency
        return min(concurrency + min(self.lent, concurrency), self.reach)

    def pop(self) -> ChainWork | None:
        if self.handed:
            return self.handed.popleft()
        return self.fresh.popleft() if self.fresh else None

    def hand(self, work: ChainWork) -> None:
        self.handed.append(work)
        self.ready.set()


class Scheduler:
    def __init__(
        self,
        ledger: Ledger,
        executor: CallExecutor,
        units: Mapping[str, LaneUnit],
        benchmarks: Mapping[str, Benchmark],
        budget: BudgetCheck | None = None,
        on_ok: AnswerHook | None = None,
    ) -> None:
        self.ledger = ledger
        self.executor = executor
        self.units = units
        """Model key -> its unit; models reaching one endpoint share the unit's lane."""
        self.benchmarks = benchmarks
        self.budget = budget
        self.on_ok = on_ok
        self.mismatches: list[str] = []
        self.failures: list[str] = []
        """For the first KEPT_FAILURES calls that ended failed, which call and why (the
        end-of-run summary; every reason is in the ledger)."""
        self.failed_calls = 0
        self._queues: dict[int, _LaneQueue] = {}
        self._start_slot: Callable[[_LaneQueue], None] | None = None
        """Starts one more slot on a lane (set while `run` drives the chains)."""

    def _queue(self, lane: Lane) -> _LaneQueue:
        return self._queues.setdefault(id(lane), _LaneQueue(lane))

    async def run(
        self,
        source: AsyncGenerator[list[PendingChain]],
        counts: Mapping[str, PendingCount],
        low_water: int = BATCH_CALLS,
    ) -> None:
        """Drive every chain `source` yields (Ledger.pending_batches); `counts` (model key ->
        what remains, Ledger.pending_counts) sizes each lane's slots before the chains arrive."""
        for key, unit in self.units.items():
            queue = self._queue(unit.lane)
            if key in counts:
                queue.reach += counts[key].chains
        feed = Feed(source, self._place, low_water)
        try:
            async with asyncio.TaskGroup() as group:

                def start_slot(queue: _LaneQueue) -> None:
                    queue.slots += 1
                    group.create_task(self._slot(queue, feed))

                self._start_slot = start_slot
                group.create_task(self._supply(feed))
                for queue in self._queues.values():
                    for _ in range(queue.allowed):
                        start_slot(queue)
        except BaseExceptionGroup as eg:
            raise first_error(eg) from None
        finally:
            self._start_slot = None

    def _place(self, chain: PendingChain) -> None:
        first = next(c for c in chain.calls if c.step not in chain.recorded)
        queue = self._queue(self.units[first.model].lane)
        queue.fresh.append(ChainWork(chain, chain.attempts_so_far))
        queue.ready.set()

    async def _supply(self, feed: Feed) -> None:
        await feed.run()
        self._wake_if_finished(feed)

    def _wake_if_finished(self, feed: Feed) -> None:
        if feed.finished:
            for queue in self._queues.values():
                queue.ready.set()

    async def _slot(self, queue: _LaneQueue, feed: Feed) -> None:
        while True:
            if queue.slots > queue.allowed:  # a lent slot's call is back: one slot too many
                queue.slots -= 1
                return
            work = queue.pop()
            if work is not None:
                await self._advance(queue.lane, work, feed)
                continue
            if feed.finished:
                queue.slots -= 1
                return
            queue.ready.clear()
            await queue.ready.wait()

    @contextmanager
    def _lend(self, lane: Lane) -> Iterator[None]:
        """While a call of `lane` waits out its own retry: its slot is lent, one more slot
        runs (within `allowed`)."""
        queue = self._queue(lane)
        queue.lent += 1
        if queue.slots < queue.allowed and self._start_slot is not None:
            self._start_slot(queue)
        try:
            yield
        finally:
            queue.lent -= 1

    async def _advance(self, lane: Lane, work: ChainWork, feed: Feed) -> None:
        """Run `work`'s steps on `lane` until the chain ends or its next step is elsewhere."""
        chain = work.chain
        bench = self.benchmarks[chain.calls[0].benchmark]
        while work.position < len(chain.calls):
            call = chain.calls[work.position]
            unit = self.units[call.model]
            recorded = chain.recorded.get(call.step)
            if recorded is not None:
                if work.blocked_reason is None:
                    work.blocked_reason = self.check_recorded(unit, bench, call, work, recorded)
                work.earlier.append(
                    StepAnswer(call.step, recorded.status, recorded.raw_text, recorded.parsed)
                )
                work.known_since.append(recorded.seq)
                work.position += 1
                continue
            reason = work.blocked_reason or unit.lane.stop_reason or (self.budget and self.budget())
            if reason:
                self.record(unit, call, CallResult(Status.BLOCKED, reason=reason))
                work.position += 1
                continue
            if unit.lane is not lane:
                self._queue(unit.lane).hand(work)
                return
            result = await self._run_call(unit, bench, call, work)
            self.record(unit, call, result)
            # No wait for the answer's commit: whatever acts on it next (its chain's next
            # request, here or on another lane) leaves only once its own start row is committed,
            # and the single writer commits in order, so the answer is committed by then.
            await self.ledger.throttle()
            if blocks_chain(result.status, bench):
                work.blocked_reason = (
                    f"an earlier call of its chain (step {call.step}) did not finish"
                )
            answer = StepAnswer(call.step, result.status, result.raw_text, result.parsed)
            if result.status is Status.OK and self.on_ok is not None:
                self.on_ok(bench, call, answer)
            work.earlier.append(answer)
            work.known_since.append(math.inf)
            work.position += 1
        feed.release(chain)
        self._wake_if_finished(feed)

    async def _run_call(
        self, unit: LaneUnit, bench: Benchmark, call: PlannedCall, work: ChainWork
    ) -> CallResult:
        try:
            messages = bench.render(call, work.earlier)
        except Exception as exc:  # a benchmark's bug or bad item data fails this call only
            return CallResult(
                Status.FAILED, reason=f"benchmark {bench.label!r} could not render: {exc!r}"
            )
        try:
            prior = work.prior_attempts.get(call.call_id, 0)
            return await self.executor.run(
                unit, call, messages, bench, prior, work.earlier, self._lend
            )
        except LaneStopped as stopped:
            return CallResult(Status.BLOCKED, reason=str(stopped))

    def check_recorded(
        self,
        unit: LaneUnit,
        bench: Benchmark,
        call: PlannedCall,
        work: ChainWork,
        recorded: RecordedAnswer,
    ) -> str | None:
        """Prove the recorded step's prompt still renders to the same bytes; later steps are
        built on it, so a mismatch means the chain cannot be continued faithfully."""
        stored = recorded.request_hash
        if stored is None:
            return None
        try:
            body = request_body(unit, bench.render(call, work.as_seen_by(recorded)))
        except Exception as exc:  # same as a mismatch: the rest of the chain cannot follow
            body, cause = b"", f"it no longer renders ({exc!r})"
        else:
            cause = "its prompt no longer renders to the recorded request"
        if request_hash(body) == stored:
            return None
        message = (
            f"call {call.call_id} (chain {call.chain_id}, step {call.step}): {cause}; the item "
            "data or prompt version changed since it was answered, so the rest of the chain "
            "is blocked"
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
            self.failed_calls += 1
            if len(self.failures) < KEPT_FAILURES:
                self.failures.append(
                    f"{call.model} / {call.benchmark} / item {call.item_id!r} "
                    f"step {call.step} (call {call.call_id}): {result.reason}"
                )


def blocks_chain(status: Status, bench: Benchmark) -> bool:
    """A blocked step (lane stopped, budget spent) always blocks the rest of its chain; a failed
    one does unless the benchmark carries on past failures."""
    if status is Status.BLOCKED:
        return True
    return status is Status.FAILED and bench.on_failed_step == "block"


def first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error to report from a failed task group: ours first (it says what to fix), then
    an interrupt, else the group itself (a bug: its traceback is the useful part)."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop(0)
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        else:
            leaves.append(exc)
    for kind in (EvaltallyError, KeyboardInterrupt):
        for leaf in leaves:
            if isinstance(leaf, kind):
                return leaf
    return group


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
            stats.cost_usd += price.usd(result.usage.input_tokens, result.usage.output_tokens)
