"""One chain's place in the rounds: which call it waits on, the answers its prompts are built
from, and whether the rest of it is blocked. The same walk as the synchronous scheduler's: a
recorded step is proved to render to its recorded request and becomes an earlier answer; a failed
or blocked step blocks the rest of the chain; a stopped lane blocks what was not sent."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from evaltally.benchmarks.base import Benchmark, StepAnswer
from evaltally.ledger import RecordedAnswer
from evaltally.records import PlannedCall, Status
from evaltally.runner.call import CallResult
from evaltally.runner.scheduler import ChainWork

Proof = Callable[[PlannedCall, list[StepAnswer], RecordedAnswer], str | None]
Record = Callable[[PlannedCall, CallResult], None]


@dataclass
class ChainCursor:
    work: ChainWork
    bench: Benchmark
    position: int = 0
    earlier: list[StepAnswer] = field(default_factory=list)
    blocked: str | None = None
    sent: Counter[str] = field(default_factory=Counter)
    """Attempts started this session, per call (the lane's max_attempts applies to these)."""
    held: bool = False
    """Its call is in a batch that is still open but cannot be followed this session: nothing
    more of this chain is sent or recorded until a resume collects that batch."""

    def advance(self, prove: Proof, record: Record, stop_reason: str | None) -> PlannedCall | None:
        """The call this chain needs answered next, or None when it has nothing left to send.
        Recorded steps are walked over; unsendable ones are recorded blocked on the way."""
        calls = self.work.chain.calls
        while not self.held and self.position < len(calls):
            call = calls[self.position]
            recorded = self.work.chain.recorded.get(call.step)
            if recorded is not None:
                if self.blocked is None:
                    self.blocked = prove(call, self.earlier, recorded)
                self.earlier.append(
                    StepAnswer(call.step, recorded.status, recorded.raw_text, recorded.parsed)
                )
                self.position += 1
                continue
            reason = self.blocked or stop_reason
            if reason is None:
                return call
            self.finish(call, CallResult(Status.BLOCKED, reason=reason), record)
        return None

    def current(self) -> PlannedCall | None:
        calls = self.work.chain.calls
        return calls[self.position] if self.position < len(calls) else None

    def next_attempt(self, call: PlannedCall) -> int:
        """The attempt number the next send of `call` carries (numbers continue across
        sessions), counted as started."""
        self.sent[call.call_id] += 1
        return self.work.prior_attempts.get(call.call_id, 0) + self.sent[call.call_id]

    def finish(self, call: PlannedCall, result: CallResult, record: Record) -> None:
        """Record the current call's outcome and move on."""
        record(call, result)
        if result.status in (Status.FAILED, Status.BLOCKED):
            self.blocked = f"an earlier call of its chain (step {call.step}) did not finish"
        self.earlier.append(StepAnswer(call.step, result.status, result.raw_text, result.parsed))
        self.position += 1
