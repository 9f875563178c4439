"""One chain's place in the rounds: which call it waits on, the answers its prompts are built
from, and whether the rest of it is blocked. The same walk as the synchronous scheduler's: a
recorded step is proved to render to its recorded request and becomes an earlier answer; a failed
or blocked step blocks the rest of the chain; a stopped lane blocks what was not sent."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from evaltally.benchmarks.base import Benchmark, StepAnswer
from evaltally.ledger import RecordedAnswer
from evaltally.records import PlannedCall, Status
from evaltally.runner.call import CallResult
from evaltally.runner.scheduler import ChainWork, blocks_chain

Proof = Callable[[PlannedCall, ChainWork, RecordedAnswer], str | None]
Record = Callable[[PlannedCall, CallResult], None]


@dataclass
class ChainCursor:
    """A chain in the rounds. Its walk state (position, earlier answers and when each was
    known, the reason the rest is blocked) is the `ChainWork` the synchronous scheduler walks,
    so both paths render, prove and block a chain the same way."""

    work: ChainWork
    bench: Benchmark
    sent: Counter[str] = field(default_factory=Counter)
    """Attempts started this session, per call (the lane's max_attempts applies to these)."""
    held: bool = False
    """Its call is in a batch that is still open but cannot be followed this session: nothing
    more of this chain is sent or recorded until a resume collects that batch."""

    @property
    def earlier(self) -> list[StepAnswer]:
        return self.work.earlier

    def advance(self, prove: Proof, record: Record, stop_reason: str | None) -> PlannedCall | None:
        """The call this chain needs answered next, or None when it has nothing left to send.
        Recorded steps are walked over; unsendable ones are recorded blocked on the way."""
        work = self.work
        calls = work.chain.calls
        while not self.held and work.position < len(calls):
            call = calls[work.position]
            recorded = work.chain.recorded.get(call.step)
            if recorded is not None:
                if work.blocked_reason is None:
                    work.blocked_reason = prove(call, work, recorded)
                work.earlier.append(
                    StepAnswer(call.step, recorded.status, recorded.raw_text, recorded.parsed)
                )
                work.known_since.append(recorded.seq)
                work.position += 1
                continue
            reason = work.blocked_reason or stop_reason
            if reason is None:
                return call
            self.finish(call, CallResult(Status.BLOCKED, reason=reason), record)
        return None

    def current(self) -> PlannedCall | None:
        calls = self.work.chain.calls
        return calls[self.work.position] if self.work.position < len(calls) else None

    def next_attempt(self, call: PlannedCall) -> int:
        """The attempt number the next send of `call` carries (numbers continue across
        sessions), counted as started."""
        self.sent[call.call_id] += 1
        return self.work.prior_attempts.get(call.call_id, 0) + self.sent[call.call_id]

    def finish(self, call: PlannedCall, result: CallResult, record: Record) -> None:
        """Record the current call's outcome and move on."""
        record(call, result)
        work = self.work
        if blocks_chain(result.status, self.bench):
            work.blocked_reason = f"an earlier call of its chain (step {call.step}) did not finish"
        work.earlier.append(StepAnswer(call.step, result.status, result.raw_text, result.parsed))
        work.known_since.append(math.inf)
        work.position += 1
