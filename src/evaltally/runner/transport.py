"""The wire: send one HttpRequest, get one HttpResponse. A seam tests can swap.

Foreign exceptions stop here: every aiohttp/asyncio/OS failure becomes a `TransportFailure`
with a stable error class, so the retry logic above never sees library types.
"""

from __future__ import annotations

import io
from typing import Protocol

import aiohttp

from evaltally.adapters.base import HttpRequest, HttpResponse
from evaltally.errors import EvaltallyError

# aiohttp copies a bytes body over 1 MiB in the event loop and warns about it; larger bodies
# (batch uploads) are handed over as a stream instead.
STREAM_BODY_BYTES = 1 << 20


class TransportFailure(EvaltallyError):
    """No HTTP response: timeout, refused or dropped connection, broken payload."""

    def __init__(self, error_class: str, detail: str) -> None:
        self.error_class = error_class
        self.detail = detail
        super().__init__(f"{error_class}: {detail}")


class Transport(Protocol):
    async def send(self, request: HttpRequest, timeout_s: float) -> HttpResponse: ...

    async def close(self) -> None: ...


class AiohttpTransport:
    """One pooled aiohttp session shared by every lane (connection reuse matters at scale)."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            # Lanes cap concurrency themselves; the connector must not add a hidden cap.
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(
                connector=connector, auto_decompress=True, raise_for_status=False
            )
        return self._session

    async def send(self, request: HttpRequest, timeout_s: float) -> HttpResponse:
        session = self._get_session()
        try:
            async with session.request(
                request.method,
                request.url,
                data=(
                    request.body
                    if len(request.body) <= STREAM_BODY_BYTES
                    else io.BytesIO(request.body)
                ),
                headers=dict(request.headers),
                timeout=aiohttp.ClientTimeout(total=timeout_s),
            ) as resp:
                body = await resp.read()
                headers = {k.lower(): v for k, v in resp.headers.items()}
                return HttpResponse(status=resp.status, headers=headers, body=body)
        except TimeoutError as exc:
            raise TransportFailure(
                "timeout", f"no complete response within {timeout_s:g}s"
            ) from exc
        except aiohttp.ClientPayloadError as exc:
            raise TransportFailure("payload", f"response body cut off: {exc}") from exc
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            raise TransportFailure("connection", f"connection dropped: {exc}") from exc
        except aiohttp.ClientConnectionError as exc:
            raise TransportFailure("connection", f"cannot connect: {exc}") from exc
        except aiohttp.ClientError as exc:
            raise TransportFailure("client", f"{type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
