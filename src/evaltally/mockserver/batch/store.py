"""One in-memory store of batches for every batch API shape: timed state transitions, answers,
faults and counters. The HTTP shapes (openai.py, anthropic.py, gemini.py) only translate.

A batch's state is derived from the time since it was created (no background task): validating
for `batch_validating_s`, in progress for `batch_in_progress_s` (the processed count grows
linearly), finalizing for `batch_finalizing_s`, then completed. Faults change the ending: `fail`
fails it after validation, `expire` ends it expired with the first half of its lines answered; a
cancel request ends it cancelled with the lines processed so far answered. Answers are made once,
when the batch ends, by the same code that answers the synchronous endpoints, so a line gets the
answer its body would get synchronously.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from evaltally.mockserver.answers import Prompt
from evaltally.mockserver.dialects import DIALECTS, ClientFault, Dialect, ErrorReply, ReplyContext
from evaltally.mockserver.fault_rules import FaultRule
from evaltally.mockserver.state import MockState

ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
_DIALECTS = {d.name: d for d in DIALECTS}


@dataclass
class Line:
    """One request of a batch, validated as the synchronous endpoint would validate it."""

    custom_id: str
    prompt: Prompt | None
    fault: ClientFault | None
    body_hash: str
    last_user: str = ""


@dataclass(frozen=True)
class LineResult:
    custom_id: str
    kind: str
    """answered | error | expired | cancelled"""
    status: int
    body: dict[str, Any] | None


@dataclass
class Job:
    id: str
    dialect: str
    lines: list[Line]
    created: float
    created_unix: float
    timing: tuple[float, float, float]
    meta: dict[str, Any] = field(default_factory=dict)
    fault: str | None = None
    failure: str | None = None
    cancelled_at: float | None = None
    processed_at_cancel: int = 0
    results: list[LineResult] | None = None


def line_from_body(
    dialect: str, custom_id: str, body: Any, headers: Any, path_model: str | None, state: MockState
) -> Line:
    """Validate one request body; a request the provider would refuse becomes its line's error."""
    body_hash = hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()
    try:
        prompt = _DIALECTS[dialect].parse(body, headers, path_model)
        if state.models and prompt.model not in state.models:
            raise _DIALECTS[dialect].model_missing(prompt.model)
    except ClientFault as exc:
        return Line(custom_id, None, exc, body_hash)
    return Line(custom_id, prompt, None, body_hash, prompt.last_user)


class BatchStore:
    def __init__(self, state: MockState, clock: Callable[[], float] = time.monotonic) -> None:
        self.state = state
        self.clock = clock
        self.files: dict[str, bytes] = {}
        self.jobs: dict[str, Job] = {}
        self._faults_from: tuple[Any, ...] = ()
        self._faults_left: Counter[str] = Counter()
        self._line_rules: tuple[FaultRule, ...] = ()
        self._line_left: list[int] = []
        self._line_seen: Counter[tuple[int, str]] = Counter()
        self.counters: Counter[str] = Counter()
        self.answered_by_body: Counter[str] = Counter()
        self.final_states: Counter[str] = Counter()

    # -- faults ------------------------------------------------------------------------------

    def take(self, kind: str) -> bool:
        """Use up one fault of `kind`, if the current config has one left."""
        faults = self.state.config.batch_faults
        if faults != self._faults_from:
            self._faults_from = faults
            self._faults_left = Counter()
            for rule in faults:
                self._faults_left[rule.kind] += rule.count
        if self._faults_left[kind] > 0:
            self._faults_left[kind] -= 1
            self.counters[f"fault_{kind}"] += 1
            return True
        return False

    def _line_fault(self, dialect: str, line: Line) -> int | None:
        rules = self.state.config.batch_line_faults
        if rules != self._line_rules:
            self._line_rules, self._line_left = rules, [r.count for r in rules]
            self._line_seen.clear()
        for i, rule in enumerate(rules):
            if rule.dialect not in (None, dialect):
                continue
            if rule.match is not None and rule.match not in line.last_user:
                continue
            if rule.scope == "body":
                if self._line_seen[(i, line.body_hash)] < rule.count:
                    self._line_seen[(i, line.body_hash)] += 1
                    return int(rule.kind)
            elif self._line_left[i] > 0:
                self._line_left[i] -= 1
                return int(rule.kind)
        return None

    # -- batches -----------------------------------------------------------------------------

    def new_id(self, prefix: str) -> str:
        return prefix + self.state.next_request_id()[:24]

    def create(self, job_id: str, dialect: str, lines: list[Line], **meta: Any) -> Job:
        cfg = self.state.config
        job = Job(
            id=job_id,
            dialect=dialect,
            lines=lines,
            created=self.clock(),
            created_unix=time.time(),
            timing=(cfg.batch_validating_s, cfg.batch_in_progress_s, cfg.batch_finalizing_s),
            meta=meta,
        )
        for kind in ("fail", "expire"):
            if job.fault is None and self.take(kind):
                job.fault = kind
        self.jobs[job_id] = job
        self.counters["created"] += 1
        self.counters["lines"] += len(lines)
        return job

    def phase(self, job: Job) -> str:
        validating, running, finalizing = job.timing
        age = self.clock() - job.created
        if job.failure is not None or job.fault == "fail":
            phase = "failed" if age >= validating else "validating"
        elif job.cancelled_at is not None:
            phase = "cancelled" if self.clock() >= job.cancelled_at + finalizing else "cancelling"
        elif age < validating:
            phase = "validating"
        elif age < validating + running:
            phase = "in_progress"
        elif job.fault == "expire":
            phase = "expired"
        elif age < validating + running + finalizing:
            phase = "finalizing"
        else:
            phase = "completed"
        if phase in ENDED and job.results is None:
            self._finish(job, phase)
        return phase

    def processed(self, job: Job) -> int:
        """Lines processed so far (the progress counts a poll shows)."""
        phase = self.phase(job)
        if job.results is not None:
            return sum(1 for r in job.results if r.kind in ("answered", "error"))
        if phase == "cancelling":
            return job.processed_at_cancel
        return self._progress(job)

    def _progress(self, job: Job) -> int:
        validating, running, _ = job.timing
        age = self.clock() - job.created - validating
        share = 1.0 if running <= 0 else min(max(age / running, 0.0), 1.0)
        return math.floor(len(job.lines) * share)

    def cancel(self, job: Job) -> None:
        if job.cancelled_at is None and self.phase(job) not in ENDED:
            job.processed_at_cancel = self._progress(job)
            job.cancelled_at = self.clock()

    def _finish(self, job: Job, phase: str) -> None:
        n = len(job.lines)
        answered = {
            "completed": n,
            "expired": math.ceil(n / 2),
            "cancelled": job.processed_at_cancel,
            "failed": 0,
        }[phase]
        results = []
        for i, line in enumerate(job.lines):
            if i < answered:
                results.append(self._answer(job, line))
            elif phase != "failed":
                results.append(LineResult(line.custom_id, phase, 0, None))
        job.results = results
        self.final_states[phase] += 1

    def _answer(self, job: Job, line: Line) -> LineResult:
        dialect: Dialect = _DIALECTS[job.dialect]
        ctx = ReplyContext(self.state.next_request_id(), int(time.time()), 0)
        status = line.fault.status if line.fault else self._line_fault(job.dialect, line)
        if status is not None or line.prompt is None:
            message = line.fault.message if line.fault else "Injected error."
            code = line.fault.code if line.fault else None
            self.counters["line_errors"] += 1
            body = dialect.error_body(ErrorReply(status or 400, message, code), ctx)
            return LineResult(line.custom_id, "error", status or 400, body)
        completion = self.state.completion(line.prompt, line.body_hash)
        self.answered_by_body[line.body_hash] += 1
        body = dialect.success(line.prompt, completion, ctx)
        return LineResult(line.custom_id, "answered", 200, body)

    def snapshot(self) -> dict[str, Any]:
        return {
            **self.counters,
            "final_states": dict(self.final_states),
            "answered_by_body": dict(self.answered_by_body),
        }

    def reset(self) -> None:
        self.counters.clear()
        self.answered_by_body.clear()
        self.final_states.clear()
