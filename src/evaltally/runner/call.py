"""Run one planned call to its outcome: attempts, retries, ledger events, parsing.

Every HTTP attempt is committed to the ledger before it is sent (start) and written after it
returns (end), so a kill leaves a visible "started, never finished" attempt that resume marks as
interrupted, and the provider never sees a request the ledger does not hold. Retry decisions
come from the adapter's classification; timing comes from tenacity (set up only once a first
attempt has failed) and the lane.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, cast

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from evaltally.adapters.base import Endpoint, HttpAdapter, HttpRequest, HttpResponse
from evaltally.benchmarks.base import Benchmark, StepAnswer
from evaltally.config import ModelConfig
from evaltally.ledger import Ledger, request_hash
from evaltally.records import (
    AttemptError,
    Completion,
    ErrorAction,
    Message,
    PlannedCall,
    RateLimitSnapshot,
    Status,
    Usage,
    canonical_json,
)
from evaltally.runner import clock as clk
from evaltally.runner.lane import DEFAULT_429_PAUSE_S, MAX_PROVIDER_WAIT_S, Lane, Ticket
from evaltally.runner.transport import Transport, TransportFailure
from evaltally.tokens import count_messages


@dataclass
class LaneUnit:
    """Everything needed to call one model: its config, the lane of its endpoint (shared with
    every other model key that reaches the same endpoint), and its adapter and endpoint. An
    offline model (`provider = "baseline"`) has neither: its benchmark's predictor answers."""

    model: ModelConfig
    lane: Lane
    adapter: HttpAdapter | None
    endpoint: Endpoint | None
    fix_hint: tuple[str, str] = ("CONFIG", "RUN")
    """(the config file, the run directory) a lane's stop reason names in its advice; "CONFIG"
    when the session read the run's copy (`tally resume`), which names no file of the user's."""
    offline: bool = field(init=False)

    def __post_init__(self) -> None:
        self.offline = self.adapter is None


@dataclass(frozen=True)
class CallResult:
    status: Status
    raw_text: str | None = None
    parsed: Any = None
    parse_path: str | None = None
    reason: str | None = None
    attempts: int = 0
    usage: Usage | None = None
    latency_ms: float | None = None
    request_hash: str | None = None


Lend = Callable[[Lane], AbstractContextManager[None]]
"""Held while a call waits out its own retry (a Retry-After, a backoff): the caller's way to
lend the call's place to other work meanwhile (runner/scheduler.py lends its slot)."""


class _Retryable(Exception):
    """A failed attempt to retry. `wait_s`: the least its own retry waits (the provider's
    Retry-After on a sporadic error); None when the lane-wide pause of a limit's 429 already
    holds it, so backoff on top would only leave the provider's capacity unused."""

    def __init__(self, error: AttemptError, wait_s: float | None = 0.0) -> None:
        self.error = error
        self.wait_s = wait_s
        super().__init__(error.detail)


class _Final(Exception):
    def __init__(self, error: AttemptError) -> None:
        self.error = error
        super().__init__(error.detail)


def offline_body(messages: Sequence[Message]) -> bytes:
    """What the ledger stores as the "request" of an offline predictor: its messages."""
    return canonical_json({"messages": list(messages)})


def request_body(unit: LaneUnit, messages: Sequence[Message]) -> bytes:
    """The exact bytes a call of `unit`'s model sends for `messages` (what the ledger stores
    and hashes)."""
    if unit.adapter is None:
        return offline_body(messages)
    assert unit.endpoint is not None
    return unit.adapter.build_request(unit.endpoint, messages).body


class CallExecutor:
    def __init__(self, ledger: Ledger, transport: Transport, sleep: clk.Sleep = clk.sleep) -> None:
        self.ledger = ledger
        self.transport = transport
        self.sleep = sleep

    async def run(
        self,
        unit: LaneUnit,
        call: PlannedCall,
        messages: list[Message],
        bench: Benchmark,
        prior_attempts: int,
        earlier: Sequence[StepAnswer] = (),
        lend: Lend | None = None,
    ) -> CallResult:
        """`earlier`: the chain's answers before `call` (what an offline predictor may read).
        `lend`: held while the call waits out its own retry."""
        if unit.offline:
            return self._offline(unit.model.model, call, messages, bench, prior_attempts, earlier)
        return await self._http(unit, call, messages, bench, prior_attempts, lend)

    def _offline(
        self,
        name: str,
        call: PlannedCall,
        messages: list[Message],
        bench: Benchmark,
        prior: int,
        earlier: Sequence[StepAnswer],
    ) -> CallResult:
        """Answer with the benchmark's offline predictor `name`: no network, same ledger."""
        body = offline_body(messages)
        rhash = request_hash(body)
        attempt = prior + 1
        self.ledger.attempt_started(call.call_id, attempt, rhash, body)
        text: str | None = None
        detail: str | None = None
        try:
            text = bench.predictors[name](bench.offline_context(call, earlier))
        except Exception as exc:  # a predictor's bug fails this call, never the run
            detail = f"offline predictor {name!r} of benchmark {bench.label!r} raised {exc!r}"
        self.ledger.attempt_finished(
            call.call_id,
            attempt,
            http_status=None,
            error_class=None if text is not None else "predictor",
            error_detail=detail,
            retry_after_s=None,
            response_body=None if text is None else text.encode(),
            usage=None if text is None else Usage(),
            latency_ms=0.0,
            request_id=None,
        )
        if text is None:
            return CallResult(Status.FAILED, reason=detail, attempts=1, request_hash=rhash)
        return completion_result(bench, call, Completion(text, "stop"), 1, 0.0, rhash)

    async def _http(
        self,
        unit: LaneUnit,
        call: PlannedCall,
        messages: list[Message],
        bench: Benchmark,
        prior: int,
        lend: Lend | None,
    ) -> CallResult:
        assert unit.endpoint is not None
        request = cast(HttpAdapter, unit.adapter).build_request(unit.endpoint, messages)
        rhash = request_hash(request.body)
        reserve = 0
        if unit.lane.counts_tokens:
            reserve = count_messages(messages) + unit.model.max_output_tokens
        state = _Attempts(unit, call, request, rhash, reserve, attempt=prior, lend=lend)
        try:
            try:
                completion = await self._attempt(state)
            except _Retryable as first_failure:
                completion = await self._retry(state, first_failure)
        except (_Retryable, _Final) as exc:
            reason = f"{exc.error.error_class}: {exc.error.detail}"
            if isinstance(exc, _Retryable):
                reason = f"gave up after {state.sent} attempts; last: {reason}"
            return CallResult(Status.FAILED, reason=reason, attempts=state.sent, request_hash=rhash)
        return completion_result(bench, call, completion, state.sent, state.latency_ms, rhash)

    async def _retry(self, state: _Attempts, first_failure: _Retryable) -> Completion:
        """Attempts after a first one that failed retryably. Most calls succeed at once, so
        tenacity is set up only here (its per-call set-up cost as much as the ledger's rows);
        the first failure is replayed as its attempt 1, so stopping and backoff count exactly
        as if it had run every attempt."""
        limits = state.unit.model.limits
        retrying = AsyncRetrying(
            stop=stop_after_attempt(limits.max_attempts),
            wait=_wait_strategy(limits.backoff_initial_s, limits.backoff_max_s),
            retry=retry_if_exception_type(_Retryable),
            sleep=partial(self._retry_sleep, state),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                if attempt.retry_state.attempt_number == 1:
                    raise first_failure
                state.unit.lane.stats.retries += 1
                completion = await self._attempt(state)
        return completion

    async def _retry_sleep(self, state: _Attempts, seconds: float) -> None:
        """One request's wait before its retry, counted on its lane (progress says why the
        lane waits). Its place is lent meanwhile (`state.lend`), but not for a wait of 0 (a
        limit's 429: the lane-wide pause holds every call alike, and lending would only start
        more chains to wait at it) nor after a run of failures (below)."""
        lane = state.unit.lane
        lane.stats.retry_waiting += 1
        lent: AbstractContextManager[None] = nullcontext()
        # An outage's failures come in a row: lending then would start new chains whose first
        # requests go out until the breaker opens. Sporadic errors come one at a time, so
        # lending only while this failure is the lane's only one in a row adds at most one
        # request to an outage.
        if state.lend is not None and seconds > 0 and lane.breaker.failures <= 1:
            lent = state.lend(lane)
        try:
            with lent:
                await self.sleep(seconds)
        finally:
            lane.stats.retry_waiting -= 1

    async def _attempt(self, state: _Attempts) -> Completion:
        unit, call, request, rhash = state.unit, state.call, state.request, state.rhash
        lane, adapter = unit.lane, cast(HttpAdapter, unit.adapter)
        ticket = await lane.acquire(state.reserve)
        state.attempt += 1
        state.sent += 1
        prepare = getattr(adapter, "prepare_attempt", None)
        wire = prepare(request) if prepare else request
        self.ledger.attempt_started(call.call_id, state.attempt, rhash, request.body)
        # Record before send: the request leaves once the batch holding its start row is
        # committed, so after a kill -9 the ledger accounts for every request the provider saw.
        await self.ledger.committed()
        started = lane.clock()
        ticket = replace(ticket, left_at=started)
        used: int | None = None
        response: HttpResponse | None = None
        snapshot: RateLimitSnapshot | None = None
        try:
            sent = await self.transport.send(
                wire, unit.model.limits.timeout_s, unit.model.limits.max_response_bytes
            )
        except TransportFailure as exc:
            action = ErrorAction.RETRY if exc.retry else ErrorAction.FAIL_CALL
            result: Completion | AttemptError = AttemptError(action, exc.error_class, exc.detail)
        else:
            response = sent
            snapshot = adapter.rate_limits(sent)
            lane.observe(snapshot, schedule=sent.status != 429, sent_at=ticket.sent_at)
            result = adapter.parse_response(sent)
        finally:
            state.latency_ms = (lane.clock() - started) * 1000.0
        if isinstance(result, Completion):
            used = result.usage.input_tokens + result.usage.output_tokens or None
        counted = snapshot is not None and snapshot.remaining_tokens is not None
        lane.release(ticket, used, provider_counted=counted)
        self.ledger.attempt_finished(
            call.call_id,
            state.attempt,
            http_status=response.status if response else None,
            error_class=None if isinstance(result, Completion) else result.error_class,
            error_detail=None if isinstance(result, Completion) else result.detail,
            retry_after_s=None if isinstance(result, Completion) else result.retry_after_s,
            response_body=response.body if response else None,
            usage=result.usage if isinstance(result, Completion) else None,
            latency_ms=state.latency_ms,
            request_id=result.request_id if isinstance(result, Completion) else None,
        )
        if isinstance(result, Completion):
            lane.accepted(ticket)
            lane.success()
            return result
        return _handle_error(unit, result, ticket, snapshot)


@dataclass
class _Attempts:
    """One call's attempts: what each of them sends, and how far they have got."""

    unit: LaneUnit
    call: PlannedCall
    request: HttpRequest
    rhash: str
    reserve: int
    attempt: int
    """The number of the last attempt made (earlier sessions' included)."""
    lend: Lend | None = None
    sent: int = 0
    latency_ms: float = 0.0


def _handle_error(
    unit: LaneUnit, error: AttemptError, ticket: Ticket, snapshot: RateLimitSnapshot | None
) -> Completion:
    lane = unit.lane
    wait_s = _own_wait(lane, error, ticket, snapshot)
    if lane.stop_reason and error.action is ErrorAction.RETRY:
        # The provider asked for a wait past the cap: this call ends with the lane's reason.
        raise _Final(replace(error, detail=f"{error.detail}; {lane.stop_reason}"))
    if error.action is ErrorAction.STOP_LANE:
        lane.stop(_stop_reason(unit, error))
        raise _Final(error)
    if error.action is ErrorAction.FAIL_CALL:
        raise _Final(error)
    if error.status != 429:
        lane.failure()
    raise _Retryable(error, wait_s)


def _own_wait(
    lane: Lane, error: AttemptError, ticket: Ticket, snapshot: RateLimitSnapshot | None
) -> float | None:
    """What a retryable error does to the lane, and the least its own retry waits (None: the
    lane's pause holds it). Only a limit's 429 pauses the lane; a wait past the cap stops it
    (a quota); any other Retry-After (a 5xx, a 529, a capacity 429) is this request's alone."""
    if error.action is not ErrorAction.RETRY:
        return 0.0
    asked = error.retry_after_s
    if asked is not None and asked > MAX_PROVIDER_WAIT_S:
        lane.pause(asked)
        return None
    if error.status == 429:
        if lane.refused(ticket, snapshot, asked, capacity=error.capacity):
            return None
        return lane.retry_wait(DEFAULT_429_PAUSE_S if asked is None else asked)
    return 0.0 if asked is None else lane.retry_wait(asked)


def _stop_reason(unit: LaneUnit, error: AttemptError) -> str:
    key = unit.model.key
    config, run_dir = unit.fix_hint
    if error.stop_kind == "model":
        # A new model id plans new calls, so resuming the run as it was would not do: the
        # replacement supersedes this model's calls and keeps every other model's answers.
        return (
            f"{key}: the endpoint does not serve model {unit.model.model!r} "
            f"({error.error_class}: {error.detail}); fix `model` (or `base_url`) of {key} in "
            f"{config}, then `tally run {config} --replace-model {key}` (the other models' "
            "answers are kept"
            + ("; CONFIG: the config file the run was started from)" if config == "CONFIG" else ")")
        )
    if error.status != 429:
        return (
            f"{key}: the provider refused the credentials ({error.error_class}: "
            f"{error.detail}); check ${unit.model.api_key_env or '(no key variable)'}, then "
            f"`tally resume {run_dir}`"
        )
    return f"{key}: the provider refused further requests ({error.error_class}: {error.detail})"


def _wait_strategy(initial: float, maximum: float) -> Any:
    backoff = wait_random_exponential(multiplier=initial, max=maximum)

    def wait(retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome else None
        if not isinstance(exc, _Retryable):
            return float(backoff(retry_state))
        if exc.wait_s is None:
            return 0.0
        return max(exc.wait_s, float(backoff(retry_state)))

    return wait


def completion_result(
    bench: Benchmark,
    call: PlannedCall,
    completion: Completion,
    attempts: int,
    latency_ms: float,
    rhash: str,
) -> CallResult:
    """A model's answer as the call's result: parsed by the benchmark (ok or parse_error)."""
    common: Mapping[str, Any] = {
        "raw_text": completion.text,
        "attempts": attempts,
        "usage": completion.usage,
        "latency_ms": latency_ms,
        "request_hash": rhash,
    }
    if not completion.text:
        # An empty answer is never `ok`, whatever the benchmark's parser accepts: nothing was
        # answered (a safety stop, a budget spent on reasoning); the finish reason says why.
        parsed = None
    else:
        try:
            parsed = bench.parse(call, completion.text)
        except Exception as exc:  # the parser's bug, not the model's answer: fail, resume re-asks
            reason = f"benchmark {bench.label!r} parser raised {exc!r}"
            return CallResult(Status.FAILED, reason=reason, **common)
    if parsed is not None and parsed.ok:
        return CallResult(Status.OK, parsed=parsed.value, parse_path=parsed.path, **common)
    if parsed is None:
        reason = f"empty answer (finish reason: {completion.finish_reason or 'none given'})"
    else:
        reason = parsed.error or "answer did not parse"
    if completion.finish_reason and completion.finish_reason.startswith("safety"):
        reason = f"blocked by the provider ({completion.finish_reason}); {reason}"
    return CallResult(Status.PARSE_ERROR, reason=reason, **common)
