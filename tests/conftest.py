"""Shared fixtures: a real mock provider on 127.0.0.1, in-process or as a subprocess; and the
`process` mark that `make quick` leaves out (docs/testing.md)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import testkit
from evaltally.mockserver import MockConfig, MockServer
from testkit import MockProcess

# What starts a process (`tally`, the mock provider, a browser, a sandboxed child): a test using
# one of these fixtures, or in a module holding one of these helpers or `subprocess`, is marked.
_PROCESS_FIXTURES = {"mock_process", "view_server", "browser", "page", "cte_run"}
_PROCESS_HELPERS = (testkit.tally, testkit.tally_background, testkit.kill_run_when)


# Seconds each (measured with --durations): sandboxed replays of whole data files and the
# sandbox's own CPU and wall-clock limits, plans of the full paper configs, a ledger summing
# 2^63-token rows, a whole CTE sweep in batch mode.
_SLOW_MODULES = {
    "tests/batch/test_batch_run.py",
    "tests/core/test_plan_ids_pinned.py",
    "tests/cte/test_cte_subsets.py",
    "tests/cte/test_cte_verify.py",
    "tests/cte_e2e/test_cte_e2e_prompts.py",
    "tests/cte_generate/test_generate_probe.py",
    "tests/cte_generate/test_generate_verify.py",
    "tests/dexbench/test_dex_verify.py",
    "tests/hostile/test_usage_bounds.py",
    "tests/sandbox/test_sandbox_pool.py",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.relative_to(testkit.REPO).as_posix() in _SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        module = vars(getattr(item, "module", None) or object)
        fixtures = set(getattr(item, "fixturenames", ()))
        if (
            fixtures & _PROCESS_FIXTURES
            or module.get("subprocess") is subprocess
            or any(v in _PROCESS_HELPERS for v in module.values() if callable(v))
            or "tally_kinds" in module
        ):
            item.add_marker(pytest.mark.process)


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
