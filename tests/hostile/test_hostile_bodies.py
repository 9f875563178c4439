"""What a provider sends is read only up to a limit counted after decompression (issue 8, item
14): a huge answer or a compression bomb fails one attempt, without a retry, in bounded memory."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from pathlib import Path

import pytest
from hostile_kit import CREDENTIAL_ENV, Model, every_provider, write_hostile_config
from hostile_server import Answer, HostileServer, Seen, completion, zeros

from evaltally.adapters.base import HttpRequest
from evaltally.runner.transport import AiohttpTransport, TransportFailure
from testkit import tally

MIB = 1 << 20
BOMB_EXPANDS_TO = 200 * MIB
LIMIT = 1 * MIB


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """About 200 KB of gzip that inflates to 200 MB of zeros (built without holding 200 MB)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(block) for block in zeros(BOMB_EXPANDS_TO)]
    return b"".join([*parts, packer.flush()])


async def send(server: HostileServer, limit: int = LIMIT) -> bytes:
    transport = AiohttpTransport()
    request = HttpRequest("POST", server.base_url + "/v1/chat/completions", b"{}")
    try:
        return (await transport.send(request, 20.0, limit)).body
    finally:
        await transport.close()


def gzip_answer(body: bytes) -> Answer:
    return Answer(headers=[("content-encoding", "gzip")], body=body)


async def refused(answer: Answer) -> TransportFailure:
    """The failure reading `answer` ends in, checked to have held less than 16 MiB at once."""
    with HostileServer(lambda seen: answer) as server:
        tracemalloc.start()
        try:
            with pytest.raises(TransportFailure) as info:
                await send(server)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 16 * MIB, f"peak {peak / MIB:.0f} MiB while reading a hostile body"
    return info.value


async def test_a_gzip_bomb_fails_in_bounded_memory(bomb: bytes) -> None:
    assert len(bomb) < 300_000
    failure = await refused(gzip_answer(bomb))
    assert failure.error_class == "response_too_large"
    assert failure.retry is False
    assert "after decompression" in failure.detail


def huge(announce: bool) -> Answer:
    """50 MB of zeros, streamed, with or without announcing its length."""
    size = 50 * MIB
    return Answer(chunks=zeros(size), length=size if announce else None)


@pytest.mark.parametrize("announce", [True, False], ids=["content-length", "until-close"])
async def test_a_50_mb_answer_is_refused_past_the_limit(announce: bool) -> None:
    assert (await refused(huge(announce))).error_class == "response_too_large"


ANSWER = completion("openai", "fine")


@pytest.mark.parametrize(
    ("encoding", "packed"),
    [
        ("gzip", gzip.compress(ANSWER)),
        ("gzip", gzip.compress(ANSWER[:40]) + gzip.compress(ANSWER[40:])),  # two members
        ("deflate", zlib.compress(ANSWER)),
        ("deflate", zlib.compress(ANSWER)[2:-4]),  # raw deflate, as some servers send it
        ("identity", ANSWER),
    ],
)
async def test_compressed_answers_within_the_limit_read_exactly(
    encoding: str, packed: bytes
) -> None:
    answer = Answer(headers=[("content-encoding", encoding)], body=packed)
    with HostileServer(lambda seen: answer) as server:
        assert await send(server, limit=len(ANSWER)) == ANSWER


@pytest.mark.parametrize(
    ("encoding", "body", "error_class", "retry"),
    [
        ("br", b"\x0b\x02\x80hello\x03", "payload", False),
        ("gzip", gzip.compress(ANSWER)[:-12], "payload", True),  # cut off
        ("gzip", b"\x1f\x8b" + b"garbage" * 10, "payload", True),
    ],
)
async def test_bodies_that_cannot_be_decoded_fail_the_attempt(
    encoding: str, body: bytes, error_class: str, retry: bool
) -> None:
    answer = Answer(headers=[("content-encoding", encoding)], body=body)
    with HostileServer(lambda seen: answer) as server, pytest.raises(TransportFailure) as info:
        await send(server)
    assert (info.value.error_class, info.value.retry) == (error_class, retry)


def test_a_run_against_a_bomb_fails_each_call_once_and_ends(tmp_path: Path, bomb: bytes) -> None:
    def answer(seen: Seen) -> Answer:
        return gzip_answer(bomb)

    models = [
        Model(m.key, m.provider, m.model, limits=f"max_response_bytes = {LIMIT}")
        for m in every_provider("bomb")
    ]
    with HostileServer(answer) as server:
        config = write_hostile_config(tmp_path, server.base_url, models)
        result = tally("run", str(config), env=CREDENTIAL_ENV)
    assert result.returncode == 3, result.stderr
    assert len(server.requests) == 4  # one attempt each: an oversized body is not retried
    assert result.stderr.count("response_too_large") == 4
    ledger = tmp_path / "runs" / "hostile" / "ledger.sqlite"
    assert ledger.stat().st_size < 10 * MIB


async def test_a_request_aiohttp_cannot_send_fails_without_a_retry() -> None:
    transport = AiohttpTransport()
    try:
        with pytest.raises(TransportFailure) as info:
            await transport.send(HttpRequest("POST", "http://[::1/v1", b"{}"), 5.0, LIMIT)
    finally:
        await transport.close()
    assert (info.value.error_class, info.value.retry) == ("bad_request", False)
