"""Batch control requests (upload, create, poll, list, download) with the lane's retry policy.

These are not attempts of any call: they are retried on their own (timeouts, dropped
connections, 429 and 5xx, with exponential backoff and full jitter, honouring Retry-After) up to
the lane's `max_attempts`. A 4xx ends the step; 401/403 stops the lane like a synchronous call's.
Error bodies are classified by the provider's synchronous adapter.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import BinaryIO, TypeVar, cast

from evaltally.adapters.base import HttpAdapter, HttpRequest, HttpResponse
from evaltally.adapters.http_errors import bad_body
from evaltally.errors import ProviderError
from evaltally.records import AttemptError, ErrorAction
from evaltally.runner import clock as clk
from evaltally.runner.call import LaneUnit
from evaltally.runner.transport import Transport, TransportFailure

# A batch's result file holds every answer of the batch (OpenAI accepts 200 MB of requests per
# batch, and answers are larger): bounded, but far above one completion's limit.
BATCH_FILE_MAX_BYTES = 4 << 30

T = TypeVar("T")


class BatchControlError(ProviderError):
    """A batch step failed for good (after retries, or at once for a 4xx)."""

    def __init__(self, what: str, error: AttemptError) -> None:
        self.error = error
        super().__init__(f"batch {what} failed: {error.error_class}: {error.detail}")


def stop_lane(unit: LaneUnit, error: AttemptError) -> None:
    """The provider refused the credentials: nothing more of this model can be sent."""
    model = unit.model
    unit.lane.stop(
        f"{model.key}: the provider refused the credentials of its batch API "
        f"({error.error_class}: {error.detail}); check "
        f"${model.api_key_env or '(no key variable)'}, then `tally resume {unit.fix_hint[1]}`"
    )


class Control:
    def __init__(self, unit: LaneUnit, transport: Transport, sleep: clk.Sleep = clk.sleep) -> None:
        self.unit = unit
        self.transport = transport
        self.sleep = sleep
        self.sync = cast(HttpAdapter, unit.adapter)

    async def call(
        self, what: str, request: HttpRequest, read: Callable[[HttpResponse], T | AttemptError]
    ) -> T:
        """`read` of the first good answer; BatchControlError when the step cannot succeed."""
        attempt = 1
        while True:
            result = await self.once(request, read)
            if not isinstance(result, AttemptError):
                return result
            await self.pause_or_raise(what, result, attempt)
            attempt += 1

    async def download(self, request: HttpRequest, sink: BinaryIO) -> None:
        """A result document written to `sink` as it arrives (each try starts it afresh)."""

        def written(response: HttpResponse) -> None:
            return None

        async def to_file() -> HttpResponse:
            sink.seek(0)
            sink.truncate()
            limits = self.unit.model.limits
            return await self.transport.send_to_file(
                request, limits.timeout_s, BATCH_FILE_MAX_BYTES, sink
            )

        attempt = 1
        while True:
            result = await self._answer(to_file, written)
            if not isinstance(result, AttemptError):
                return
            await self.pause_or_raise("download", result, attempt)
            attempt += 1

    async def once(
        self, request: HttpRequest, read: Callable[[HttpResponse], T | AttemptError]
    ) -> T | AttemptError:
        """One send: the read answer, or the classified failure."""
        limits = self.unit.model.limits
        cap = max(limits.max_response_bytes, BATCH_FILE_MAX_BYTES)
        return await self._answer(lambda: self.transport.send(request, limits.timeout_s, cap), read)

    async def _answer(
        self,
        send: Callable[[], Awaitable[HttpResponse]],
        read: Callable[[HttpResponse], T | AttemptError],
    ) -> T | AttemptError:
        try:
            response = await send()
        except TransportFailure as exc:
            action = ErrorAction.RETRY if exc.retry else ErrorAction.FAIL_CALL
            return AttemptError(action, exc.error_class, exc.detail)
        if not 200 <= response.status <= 299:
            error = self.sync.parse_response(response)
            if isinstance(error, AttemptError):
                return error
            return bad_body(response.body, "an error status with a success body", response.status)
        try:
            return read(response)
        except ProviderError as exc:
            return AttemptError(ErrorAction.FAIL_CALL, "bad_batch_answer", str(exc))

    async def pause_or_raise(self, what: str, error: AttemptError, attempt: int) -> None:
        """Wait before the next try of a retryable failure; raise when there is none."""
        limits = self.unit.model.limits
        if error.action is ErrorAction.STOP_LANE:
            stop_lane(self.unit, error)
        if error.action is not ErrorAction.RETRY or attempt >= limits.max_attempts:
            raise BatchControlError(what, error)
        cap = min(limits.backoff_max_s, limits.backoff_initial_s * 2 ** (attempt - 1))
        wait = error.retry_after_s if error.retry_after_s is not None else random.uniform(0, cap)
        await self.sleep(wait)
