"""Running the mock: `MockServer` in an event loop (tests, bench), `serve` as a process (CLI)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web

from evaltally.mockserver.app import build_app
from evaltally.mockserver.batch.routes import BATCH_STORE
from evaltally.mockserver.batch.store import BatchStore
from evaltally.mockserver.config import MockConfig
from evaltally.mockserver.state import MockState
from evaltally.ready_file import announce

# In-flight handlers (hangs above all) get this long to finish when the server stops.
_SHUTDOWN_TIMEOUT_S = 0.25


class MockServer:
    """A mock provider on loopback, as an async context manager.

    async with MockServer(MockConfig(rpm=60), port=0) as srv:
        url = srv.base_url            # "http://127.0.0.1:<port>"
        srv.update(error_503_rate=1)  # start an outage
        srv.stats()["by_body"]        # sha256(body) -> times received
    """

    def __init__(
        self, config: MockConfig | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.state = MockState(config or MockConfig())
        self.host = host
        self._requested_port = port
        self.port = 0
        self._runner: web.AppRunner | None = None
        self.batches: BatchStore | None = None

    @property
    def config(self) -> MockConfig:
        return self.state.config

    @property
    def base_url(self) -> str:
        if not self.port:
            raise RuntimeError("MockServer is not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> MockServer:
        # handler_cancellation: a client that gives up on a hanging request frees its handler.
        app = build_app(self.state)
        self.batches = app[BATCH_STORE]
        runner = web.AppRunner(
            app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=_SHUTDOWN_TIMEOUT_S,
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._requested_port, backlog=1024)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = _bound_port(runner)
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> MockServer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def stats(self) -> dict[str, Any]:
        """A snapshot of the counters (the same JSON GET /stats returns)."""
        batch = self.batches.snapshot() if self.batches is not None else {}
        return {**self.state.stats.snapshot(), "batch": batch}

    def reset_stats(self) -> None:
        self.state.reset_stats()
        if self.batches is not None:
            self.batches.reset()

    def update(self, **knobs: Any) -> MockConfig:
        """Change knobs at runtime; raises ConfigError (and changes nothing) on a bad knob."""
        return self.state.update(knobs, source="MockServer.update")


def _bound_port(runner: web.AppRunner) -> int:
    for addr in runner.addresses:
        if isinstance(addr, tuple) and len(addr) >= 2:
            return int(addr[1])
    raise RuntimeError("mock server did not bind a TCP port")


def serve(
    config: MockConfig,
    host: str = "127.0.0.1",
    port: int = 0,
    ready_file: Path | None = None,
) -> None:
    """Run until SIGINT/SIGTERM. With port 0 a free port is bound; `ready_file` then receives the
    base URL (one line, written atomically) so a parent process can find the server."""
    asyncio.run(_serve(config, host, port, ready_file))


async def _serve(config: MockConfig, host: str, port: int, ready_file: Path | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with MockServer(config, host=host, port=port) as srv:
        if ready_file is not None:
            announce(ready_file, srv.base_url)
        print(f"mock provider listening on {srv.base_url} (pid {os.getpid()})", file=sys.stderr)
        await stop.wait()
    print("mock provider stopped", file=sys.stderr)
