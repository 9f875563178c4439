"""Shared fixtures: a real mock provider on 127.0.0.1, in-process or as a subprocess."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evaltally.mockserver import MockConfig, MockServer
from testkit import MockProcess


@pytest.fixture
async def mock_server() -> AsyncIterator[Callable[..., Any]]:
    """Factory: `srv = await mock_server(latency_ms=5, ...)` starts a MockServer on loopback."""
    servers: list[MockServer] = []

    async def start(**knobs: Any) -> MockServer:
        srv = MockServer(MockConfig(**knobs), host="127.0.0.1", port=0)
        await srv.start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        await srv.stop()


@pytest.fixture
def mock_process(tmp_path: Path) -> Iterator[Callable[..., MockProcess]]:
    """Factory: a mock provider in its own process (for tests where the client blocks)."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> MockProcess:
        ready = tmp_path / f"mock-ready-{len(procs)}"
        cmd = [sys.executable, "-m", "evaltally.mockserver", "--ready-file", str(ready), *args]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append(proc)
        deadline = time.monotonic() + 20
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                _, stderr = proc.communicate()
                raise RuntimeError(f"mock server did not start: {stderr.decode()}")
            time.sleep(0.05)
        return MockProcess(ready.read_text().strip(), proc)

    yield start
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
