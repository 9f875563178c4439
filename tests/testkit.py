"""Helpers shared by the tests: sweep configs written to tmp_path, the `tally` command as a real
subprocess, and a handle on a mock provider running in its own process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FAKE_KEY = "sk-test-DO-NOT-LEAK-0123456789abcdefXYZ"


@dataclass
class MockProcess:
    base_url: str
    proc: subprocess.Popen[bytes]

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.base_url + "/stats", timeout=5) as resp:
            data: dict[str, Any] = orjson.loads(resp.read())
            return data

    def reset_stats(self) -> None:
        request = urllib.request.Request(self.base_url + "/stats/reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=5):
            pass


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


def mock_model(key: str, base_url: str, limits: str) -> str:
    """A `[[models]]` table for an OpenAI-shaped model `<key>-model` on a mock provider."""
    return (
        f'[[models]]\nkey = "{key}"\nprovider = "openai"\nmodel = "{key}-model"\n'
        f'base_url = "{base_url}/v1"\napi_key_env = "EVALTALLY_TEST_KEY"\n'
        f"[models.params]\nmax_tokens = 32\n[models.limits]\n{limits}\n"
    )


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


def tally_background(*args: str) -> subprocess.Popen[bytes]:
    """`tally` as a background subprocess with the test key set; read it with communicate()."""
    return subprocess.Popen(
        [sys.executable, "-m", "evaltally", *args],
        env={**os.environ, "EVALTALLY_TEST_KEY": FAKE_KEY},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def kill_run_when(
    config: Path, ready: Callable[[], bool], timeout: float = 60, *, options: tuple[str, ...] = ()
) -> None:
    """`tally run CONFIG [options]` as a subprocess, killed with SIGKILL as soon as `ready()`
    holds (or the run ends, or `timeout` seconds pass): a crash at a moment the test chooses."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "evaltally", "run", str(config), *options],
        env={**os.environ, "EVALTALLY_TEST_KEY": FAKE_KEY},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline and not ready():
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def exported(run_dir: Path, out: Path) -> list[dict[str, Any]]:
    """`tally export RUN_DIR -o OUT`, which must succeed, read back as rows."""
    assert tally("export", str(run_dir), "-o", str(out)).returncode == 0
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]
