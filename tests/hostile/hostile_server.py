"""A hostile HTTP provider on 127.0.0.1, written on raw asyncio streams.

It is deliberately not the project's mock server (aiohttp.web, well-behaved by construction):
this one writes whatever bytes a test asks for: redirects to another origin, echoes of every
credential it received, bodies far over any limit, compression bombs, broken status lines.

It runs its own event loop in a daemon thread, so a test can drive `tally` as a real subprocess
against it; leaving the `with` block stops it and closes every connection it holds. It records
every request it saw (`requests`), which is how a test proves what a client sent.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import orjson

START_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Seen:
    """One request as received. Header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def dialect(self) -> str:
        if self.path.endswith("/chat/completions"):
            return "openai"
        if self.path.endswith("/v1/messages"):
            return "anthropic"
        if ":generateContent" in self.path:
            return "gemini"
        return "bedrock"

    def mentions(self, token: str) -> bool:
        return token in self.path or token.encode() in self.body


@dataclass
class Answer:
    """What to write back. `chunks` (instead of `body`) streams a large body piece by piece;
    `length` announces a Content-Length for it (None: no length, the connection closes at the
    end). `status_line` replaces the whole first line (to send a broken one)."""

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    chunks: Iterable[bytes] | None = None
    length: int | None = None
    status_line: bytes | None = None


Handler = Callable[[Seen], Answer]


class HostileServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Seen] = []
        self.base_url = ""
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def __enter__(self) -> HostileServer:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise RuntimeError("hostile server did not start")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(START_TIMEOUT_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(START_TIMEOUT_S)
        self._loop.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while (seen := await _read_request(reader)) is not None:
                self.requests.append(seen)
                if not await _write_answer(writer, self.handler(seen)):
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client hung up, e.g. after refusing an oversized body
        finally:
            self._writers.discard(writer)
            writer.close()


async def _read_request(reader: asyncio.StreamReader) -> Seen | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Seen(method, path, headers, body)


async def _write_answer(writer: asyncio.StreamWriter, answer: Answer) -> bool:
    """Write `answer`; False when the connection must close after it."""
    keep_open = answer.chunks is None or answer.length is not None
    head = [answer.status_line or f"HTTP/1.1 {answer.status} Hostile".encode()]
    length = len(answer.body) if answer.chunks is None else answer.length
    headers = [*answer.headers, ("connection", "keep-alive" if keep_open else "close")]
    if length is not None:
        headers.append(("content-length", str(length)))
    head += [f"{name}: {value}".encode() for name, value in headers]
    writer.write(b"\r\n".join(head) + b"\r\n\r\n")
    for chunk in answer.chunks if answer.chunks is not None else [answer.body]:
        writer.write(chunk)
        await writer.drain()
    return keep_open


# -- provider-shaped bodies -------------------------------------------------------------------


def completion(dialect: str, text: str) -> bytes:
    """A minimal successful answer in a provider's shape."""
    shapes: dict[str, Any] = {
        "openai": {
            "id": "hostile-1",
            "choices": [
                {"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5},
        },
        "anthropic": {
            "id": "hostile-1",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 5, "output_tokens": 5},
        },
        "gemini": {
            "candidates": [{"content": {"parts": [{"text": text}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 5},
        },
        "bedrock": {
            "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 5, "outputTokens": 5},
        },
    }
    return orjson.dumps(shapes[dialect])


def error_body(message: str, kind: str = "invalid_request_error") -> bytes:
    """An error every dialect reads its message from (`error.message`, Bedrock's `message`)."""
    return orjson.dumps(
        {"error": {"message": message, "type": kind, "status": kind}, "message": message}
    )


def zeros(total: int, piece: int = 1 << 20) -> Iterator[bytes]:
    """`total` zero bytes in pieces, never all in memory."""
    block = bytes(piece)
    for start in range(0, total, piece):
        yield block[: min(piece, total - start)]
