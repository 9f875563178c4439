"""A `Transport` that answers from a function of the request, without a socket (like httpx's
MockTransport): the fast test tier drives whole sessions through it on a virtual clock
(runner/clock.py), so retries, 429 pauses, lane stops, the breaker and pacing recovery are
checked in milliseconds.

The function returns the `HttpResponse` the provider would send, or raises a
`TransportFailure` with one of the error classes the real transport maps aiohttp's failures to
(`timeout`, `connection`, `payload`, ...). What the layers above see keeps the real transport's
contract: header names lower-cased, headers and body redacted, a body over the size limit
refused. What aiohttp itself does on a socket (redirects, compression, cut-off bodies, slow
servers) is tested against real local servers instead (docs/testing.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import BinaryIO

from evaltally.adapters.base import HttpRequest, HttpResponse
from evaltally.redact import redact_bytes
from evaltally.runner.transport import redacted_headers, too_large

Handler = Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]
"""The provider as a function: a response for each request (async if it must wait)."""


class ScriptedTransport:
    """Every request goes to `handler`; `requests` keeps them in the order they were sent."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[HttpRequest] = []
        self.closed = False

    async def send(
        self, request: HttpRequest, timeout_s: float, max_body_bytes: int
    ) -> HttpResponse:
        return _as_received(await self._answer(request), max_body_bytes)

    async def send_to_file(
        self, request: HttpRequest, timeout_s: float, max_body_bytes: int, sink: BinaryIO
    ) -> HttpResponse:
        response = await self._answer(request)
        if not 200 <= response.status <= 299:
            return _as_received(response, max_body_bytes)
        if len(response.body) > max_body_bytes:
            raise too_large(max_body_bytes, "")
        sink.write(response.body)  # unredacted, as the real transport writes it
        return _as_received(HttpResponse(response.status, response.headers, b""), max_body_bytes)

    async def close(self) -> None:
        self.closed = True

    async def _answer(self, request: HttpRequest) -> HttpResponse:
        self.requests.append(request)
        answer = self.handler(request)
        return await answer if inspect.isawaitable(answer) else answer


def _as_received(response: HttpResponse, max_body_bytes: int) -> HttpResponse:
    """What the real transport hands up: a bounded body, redacted, lower-cased header names."""
    if len(response.body) > max_body_bytes:
        raise too_large(max_body_bytes, "")
    return HttpResponse(
        status=response.status,
        headers=redacted_headers(response.headers),
        body=redact_bytes(response.body),
    )
