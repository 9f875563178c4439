"""Resumable, hash-pinned download against a local aiohttp server (never the internet)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web
from typer.testing import CliRunner

from evaltally.benchmarks.cte.cli import app
from evaltally.benchmarks.cte.fetch import FILENAME, fetch_async
from evaltally.errors import DataError

BODY = b"".join(b'{"line": %d, "pad": "%s"}\n' % (i, b"x" * (i % 50)) for i in range(3000))
SHA = hashlib.sha256(BODY).hexdigest()


@dataclass
class Server:
    url: str
    ranges: list[str | None] = field(default_factory=list)
    honour_range: bool = True


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    state = Server(url="")

    async def handle(request: web.Request) -> web.Response:
        rng = request.headers.get("Range")
        state.ranges.append(rng)
        if rng and state.honour_range:
            start = int(rng.removeprefix("bytes=").split("-")[0])
            if start >= len(BODY):
                return web.Response(status=416)
            return web.Response(status=206, body=BODY[start:])
        return web.Response(body=BODY)

    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404)

    webapp = web.Application()
    webapp.router.add_get(f"/{FILENAME}", handle)
    webapp.router.add_get("/missing", missing)
    runner = web.AppRunner(webapp)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    state.url = f"http://{host}:{port}"
    yield state
    await runner.cleanup()


async def test_fresh_download(server: Server, tmp_path: Path) -> None:
    path = await fetch_async(tmp_path, urls=[f"{server.url}/{FILENAME}"], sha256=SHA)
    assert path == tmp_path / FILENAME and path.read_bytes() == BODY
    assert server.ranges == [None]
    assert not (tmp_path / (FILENAME + ".part")).exists()
    # already present with the right hash: no request at all
    await fetch_async(tmp_path, urls=[f"{server.url}/{FILENAME}"], sha256=SHA)
    assert server.ranges == [None]


async def test_resume_from_a_part_file(server: Server, tmp_path: Path) -> None:
    (tmp_path / (FILENAME + ".part")).write_bytes(BODY[:12345])
    path = await fetch_async(tmp_path, urls=[f"{server.url}/{FILENAME}"], sha256=SHA)
    assert path.read_bytes() == BODY
    assert server.ranges == ["bytes=12345-"]


async def test_server_ignoring_range_restarts(server: Server, tmp_path: Path) -> None:
    server.honour_range = False
    (tmp_path / (FILENAME + ".part")).write_bytes(BODY[:500])
    path = await fetch_async(tmp_path, urls=[f"{server.url}/{FILENAME}"], sha256=SHA)
    assert path.read_bytes() == BODY


async def test_complete_part_file_416(server: Server, tmp_path: Path) -> None:
    (tmp_path / (FILENAME + ".part")).write_bytes(BODY)
    path = await fetch_async(tmp_path, urls=[f"{server.url}/{FILENAME}"], sha256=SHA)
    assert path.read_bytes() == BODY and server.ranges == [f"bytes={len(BODY)}-"]


async def test_corrupt_part_is_discarded_and_redownloaded(server: Server, tmp_path: Path) -> None:
    (tmp_path / (FILENAME + ".part")).write_bytes(b"garbage" * 10)
    path = await fetch_async(tmp_path, urls=[f"{server.url}/{FILENAME}"], sha256=SHA)
    assert path.read_bytes() == BODY
    assert server.ranges == ["bytes=70-", None]


async def test_wrong_hash_is_refused_and_mirror_tried(server: Server, tmp_path: Path) -> None:
    urls = [f"{server.url}/missing", f"{server.url}/{FILENAME}"]
    with pytest.raises(DataError) as err:
        await fetch_async(tmp_path, urls=urls, sha256="0" * 64)
    msg = str(err.value)
    assert "HTTP 404" in msg and "!= pinned" in msg and "offline machine" in msg
    assert not (tmp_path / FILENAME).exists()
    assert not (tmp_path / (FILENAME + ".part")).exists()


def test_cli_offline_says_where_to_put_a_copy(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["fetch", "-o", str(tmp_path), "--url", "http://127.0.0.1:9/core_v1.jsonl"]
    )
    assert result.exit_code == 2
    assert "offline machine" in result.output
    assert str(tmp_path / FILENAME) in result.output
