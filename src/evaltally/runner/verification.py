"""The verification hook: every ok answer of a benchmark that verifies answers gets a verdict.

The scheduler hands each new ok answer to `Verifier.submit`; a session also submits the ok
answers an earlier session recorded but never verified (it was killed first), and `tally
regrade` submits every ok answer again, from the ledger alone, without any model request.
Jobs run in the worker pool (off the event loop); verdicts are appended to the ledger's
`verifications` table. The chain does not wait for its verdict.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Mapping
from typing import Any, TextIO

from evaltally.benchmarks.base import Benchmark, StepAnswer, VerificationJob
from evaltally.ledger import Ledger
from evaltally.records import PlannedCall, Status
from evaltally.redact import redact
from evaltally.runner.workers import Verdict, WorkerPool


class Verifier:
    def __init__(self, ledger: Ledger, pool: WorkerPool) -> None:
        self.ledger = ledger
        self.pool = pool
        self.counts: Counter[str] = Counter()
        self.verdicts: dict[str, str] = {}
        """call_id -> the verdict recorded in this session."""
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, bench: Benchmark, call: PlannedCall, answer: StepAnswer) -> None:
        try:
            job = bench.verification(call, answer)
        except Exception as exc:  # a benchmark's bug: recorded as this answer's verdict
            verdict = Verdict("error", reason=f"building the check raised {exc!r}")
            self._record(call, verdict, f"{bench.label}:verification")
            return
        if job is None:
            return
        task = asyncio.create_task(self._run(call, job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, call: PlannedCall, job: VerificationJob) -> None:
        self._record(call, await self.pool.run(job), job.function)

    def _record(self, call: PlannedCall, verdict: Verdict, verifier: str) -> None:
        # A last layer: a check's messages quote what the checked code printed or raised.
        self.ledger.verification(
            call.call_id,
            verdict.status,
            detail=_redacted(verdict.detail),
            reason=None if verdict.reason is None else redact(verdict.reason),
            verifier=verifier,
        )
        self.counts[verdict.status] += 1
        self.verdicts[call.call_id] = verdict.status

    async def drain(self) -> None:
        """Wait for every submitted job's verdict."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks))

    async def cancel(self) -> None:
        """Abandon unfinished jobs (the session is ending early): they record nothing, and a
        later session verifies those answers."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)): _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


def check_verification(benchmarks: Mapping[str, Benchmark], warn: TextIO | None = None) -> None:
    """Before anything is sent or verified: every verifying benchmark can verify (else its
    `EvaltallyError`, e.g. no OS sandbox), and each warning it has is written to `warn`
    (default stderr), on every run."""
    for bench in benchmarks.values():
        if bench.verifies:
            notice = bench.verification_ready()
            if notice:
                print(f"warning: {bench.label}: {notice}", file=warn or sys.stderr, flush=True)


async def verify_recorded(
    ledger: Ledger,
    verifier: Verifier,
    benchmarks: Mapping[str, Benchmark],
    *,
    unverified_only: bool,
) -> dict[str, str | None]:
    """Submit the recorded ok answers of every verifying benchmark; returns call_id -> the
    verdict each had before (None: none yet)."""
    labels = [label for label, bench in benchmarks.items() if bench.verifies]
    before: dict[str, str | None] = {}
    for item in await ledger.answers_to_verify(labels, unverified_only=unverified_only):
        answer = StepAnswer(item.call.step, Status.OK, item.raw_text, item.parsed)
        before[item.call.call_id] = item.verdict
        verifier.submit(benchmarks[item.call.benchmark], item.call, answer)
    return before
