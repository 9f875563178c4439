"""The wire: send one HttpRequest, get one HttpResponse. A seam tests can swap.

Foreign exceptions stop here: every aiohttp/asyncio/OS failure becomes a `TransportFailure`
with a stable error class, so the retry logic above never sees library types.

A provider is untrusted, so the wire holds three lines of defence:

- redirects are never followed: a 3xx comes back as it is and fails the call, so no header
  (API key, signature, session token) is ever sent to an origin the config did not name;
- a body is read only up to a size limit counted on decompressed bytes as they arrive (we
  inflate gzip/deflate ourselves, in bounded steps), so a huge answer or a compression bomb
  fails one attempt instead of the machine's memory;
- what comes back (body, headers, error text) is redacted (evaltally.redact) before anyone
  above this module can store or print it.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import AsyncIterator, Mapping
from typing import BinaryIO, Protocol

import aiohttp

from evaltally.adapters.base import HttpRequest, HttpResponse
from evaltally.errors import EvaltallyError
from evaltally.redact import redact, redact_bytes

READ_CHUNK_BYTES = 64 * 1024
ACCEPT_ENCODING = "gzip, deflate"
"""The only encodings we inflate; a server answering in another one fails the attempt."""

# aiohttp copies a bytes body over 1 MiB in the event loop and warns about it; larger bodies
# (batch uploads) are handed over as a stream instead.
STREAM_BODY_BYTES = 1 << 20


class TransportFailure(EvaltallyError):
    """No usable HTTP response: timeout, refused or dropped connection, broken or oversized body.

    `retry` is False when sending the same request again cannot help (the body is over the size
    limit, the request cannot be sent as built)."""

    def __init__(self, error_class: str, detail: str, *, retry: bool = True) -> None:
        self.error_class = error_class
        # One line: library messages (a bad status line) span several, and details end up in
        # one-line failure summaries.
        self.detail = " ".join(redact(detail).split())
        self.retry = retry
        super().__init__(f"{error_class}: {self.detail}")


class Transport(Protocol):
    async def send(
        self, request: HttpRequest, timeout_s: float, max_body_bytes: int
    ) -> HttpResponse: ...

    async def send_to_file(
        self, request: HttpRequest, timeout_s: float, max_body_bytes: int, sink: BinaryIO
    ) -> HttpResponse:
        """Like `send`, but a 2xx body is written (decoded, unredacted) to `sink` as it arrives
        and the response's body is empty: for batch result files, which must not be held in
        memory. Other answers carry their body as `send` would."""
        ...

    async def close(self) -> None: ...


def too_large(limit: int, how: str) -> TransportFailure:
    return TransportFailure(
        "response_too_large",
        f"response body over limits.max_response_bytes ({limit:,} bytes{how}); no completion "
        "needs that much, so the call fails without a retry (raise the limit if this endpoint "
        "really answers this much)",
        retry=False,
    )


class _Inflater:
    """gzip/deflate decoding whose output is capped: never more than `limit` bytes in memory."""

    def __init__(self, encoding: str, limit: int) -> None:
        self.encoding = encoding
        self.limit = limit
        self.produced = 0
        self._decoder: zlib._Decompress | None = None

    def _new(self, first: bytes) -> zlib._Decompress:
        if self.encoding == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        # "deflate" is meant to be zlib-wrapped, but some servers send raw deflate.
        wrapped = len(first) >= 2 and first[0] & 0x0F == 8 and (first[0] << 8 | first[1]) % 31 == 0
        return zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)

    def feed(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        while data:
            if self._decoder is None or (self._decoder.eof and self.encoding == "gzip"):
                self._decoder = self._new(data)  # gzip may concatenate members
            elif self._decoder.eof:
                break  # bytes after the end of a deflate stream are not part of the body
            piece = self._decoder.decompress(data, self.limit - self.produced + 1)
            self.produced += len(piece)
            if self.produced > self.limit:
                raise too_large(self.limit, " after decompression")
            out.append(piece)
            data = self._decoder.unconsumed_tail or self._decoder.unused_data
        return out

    def finish(self) -> None:
        if self._decoder is not None and not self._decoder.eof:
            raise TransportFailure("payload", f"{self.encoding} response body cut off")


async def read_bounded(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """The (decoded) body of `resp`, or TransportFailure once it passes `limit` bytes."""
    if _encoding(resp) in ("identity", "") and resp.content_length is not None:
        if resp.content_length > limit:
            raise too_large(limit, f"; the server announced {resp.content_length:,}")
        # The parser stops at the announced length: at most `limit` bytes, read at once.
        return await resp.read()
    return b"".join([chunk async for chunk in decoded_chunks(resp, limit)])


def _encoding(resp: aiohttp.ClientResponse) -> str:
    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "", "gzip", "deflate"):
        raise TransportFailure(
            "payload",
            f"response body in content-encoding {encoding!r}; only {ACCEPT_ENCODING} was offered",
            retry=False,
        )
    return encoding


async def decoded_chunks(resp: aiohttp.ClientResponse, limit: int) -> AsyncIterator[bytes]:
    """The decoded body of `resp` in bounded pieces; TransportFailure once it passes `limit`."""
    encoding = _encoding(resp)
    inflater = _Inflater(encoding, limit) if encoding in ("gzip", "deflate") else None
    received = 0
    try:
        async for chunk in resp.content.iter_chunked(READ_CHUNK_BYTES):
            pieces = inflater.feed(chunk) if inflater is not None else [chunk]
            for piece in pieces:
                received += len(piece)
                if received > limit:
                    raise too_large(limit, "")
                yield piece
        if inflater is not None:
            inflater.finish()
    except zlib.error as exc:
        raise TransportFailure("payload", f"corrupt {encoding} response body: {exc}") from exc


async def _to_file(resp: aiohttp.ClientResponse, limit: int, sink: BinaryIO) -> None:
    try:
        async for piece in decoded_chunks(resp, limit):
            sink.write(piece)
    except TransportFailure as exc:
        if exc.error_class != "response_too_large":
            raise
        raise TransportFailure(
            "response_too_large",
            f"file over {limit:,} bytes (decompressed); not read further: split the sweep into "
            "smaller batches ([models.batch] max_requests)",
            retry=False,
        ) from exc


def redacted_headers(raw: Mapping[str, str]) -> dict[str, str]:
    """Header names lower-cased, values redacted. A value holding a credential makes the values
    joined hold it too, so one search over the joined values clears them all at once; only
    then is each value searched on its own."""
    headers = {k.lower(): v for k, v in raw.items()}
    joined = "\n".join(headers.values())
    if redact(joined) == joined:
        return headers
    return {k: redact(v) for k, v in headers.items()}


class AiohttpTransport:
    """One pooled aiohttp session shared by every lane (connection reuse matters at scale)."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            # Lanes cap concurrency themselves; the connector must not add a hidden cap.
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(
                connector=connector,
                auto_decompress=False,  # read_bounded inflates, within the size limit
                raise_for_status=False,
                # Cookies are not port-scoped: one provider on a host could plant them for another.
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        return self._session

    async def send(
        self, request: HttpRequest, timeout_s: float, max_body_bytes: int
    ) -> HttpResponse:
        return await self._exchange(request, timeout_s, max_body_bytes, None)

    async def send_to_file(
        self, request: HttpRequest, timeout_s: float, max_body_bytes: int, sink: BinaryIO
    ) -> HttpResponse:
        return await self._exchange(request, timeout_s, max_body_bytes, sink)

    async def _exchange(
        self, request: HttpRequest, timeout_s: float, max_body_bytes: int, sink: BinaryIO | None
    ) -> HttpResponse:
        session = self._get_session()
        headers = {"accept-encoding": ACCEPT_ENCODING, **request.headers}
        try:
            async with session.request(
                request.method,
                request.url,
                data=(
                    request.body
                    if len(request.body) <= STREAM_BODY_BYTES
                    else io.BytesIO(request.body)
                ),
                headers=headers,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=timeout_s),
            ) as resp:
                if sink is not None and 200 <= resp.status <= 299:
                    await _to_file(resp, max_body_bytes, sink)
                    body = b""
                else:
                    body = await read_bounded(resp, max_body_bytes)
                return HttpResponse(
                    status=resp.status,
                    headers=redacted_headers(resp.headers),
                    body=redact_bytes(body),
                )
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
        except ValueError as exc:
            # aiohttp refuses a request it cannot send as built (an invalid URL or header).
            raise TransportFailure("bad_request", str(exc), retry=False) from exc
        except aiohttp.ClientError as exc:
            raise TransportFailure("client", f"{type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
