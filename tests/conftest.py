"""Shared fixtures: a real mock provider on 127.0.0.1 (in-process or as a subprocess), sweep
configs written to tmp_path, and the `tally` command run as a real subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from evaltally.mockserver import MockConfig, MockServer

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FAKE_KEY = "sk-test-DO-NOT-LEAK-0123456789abcdefXYZ"


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


@dataclass
class MockProcess:
    base_url: str
    proc: subprocess.Popen[bytes]

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.base_url + "/stats", timeout=5) as resp:
            data: dict[str, Any] = orjson.loads(resp.read())
            return data


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


def write_items(path: Path, n: int, *, turns: int = 0) -> Path:
    lines = []
    for i in range(n):
        if turns:
            item = {"id": f"c{i}", "turns": [f"chain {i} turn {t}" for t in range(turns)]}
        else:
            item = {"id": f"q{i}", "messages": [{"role": "user", "content": f"question {i}"}]}
        lines.append(orjson.dumps(item).decode())
    path.write_text("\n".join(lines) + "\n")
    return path


def write_config(
    tmp_path: Path,
    base_url: str,
    *,
    items: str = "items.jsonl",
    name: str = "t",
    samples: int = 1,
    limits: str = "concurrency = 8\nbackoff_initial_s = 0.05\nbackoff_max_s = 0.5",
    models: tuple[str, ...] = ("m1",),
    extra_model: str = "",
    parse: str = "text",
) -> Path:
    blocks = [f'[run]\nname = "{name}"\nruns_dir = "runs"\n']
    for key in models:
        blocks.append(
            f'[[models]]\nkey = "{key}"\nprovider = "openai"\nmodel = "{key}-model"\n'
            f'base_url = "{base_url}/v1"\napi_key_env = "EVALTALLY_TEST_KEY"\n{extra_model}'
            f"[models.params]\ntemperature = 0.0\nmax_tokens = 64\n[models.limits]\n{limits}\n"
        )
    blocks.append(
        f'[[benchmarks]]\nkind = "prompts"\npath = "{items}"\nsamples = {samples}\n'
        f'parse = "{parse}"\n'
    )
    path = tmp_path / f"{name}.toml"
    path.write_text("\n".join(blocks))
    return path


def tally(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run `tally` as a real subprocess with the test key set."""
    full_env = {**os.environ, "EVALTALLY_TEST_KEY": FAKE_KEY, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "evaltally", *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
