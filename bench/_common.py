"""Shared pieces of the benchmarks: a mock provider in its own process, sweep configs, timing.

Everything talks to 127.0.0.1 only. Every wait is bounded by a deadline.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
PYTHON = sys.executable
KEY_ENV = "EVALTALLY_BENCH_KEY"
FAKE_KEY = "sk-bench-0123456789abcdef"
MODEL = "bench-model"


@dataclass
class Mock:
    base_url: str
    proc: subprocess.Popen[bytes]

    def _get(self, path: str) -> dict[str, Any]:
        with urllib.request.urlopen(self.base_url + path, timeout=10) as resp:
            data: dict[str, Any] = json.loads(resp.read())
        return data

    def stats(self) -> dict[str, Any]:
        return self._get("/stats")

    def reset(self) -> None:
        req = urllib.request.Request(self.base_url + "/stats/reset", data=b"{}", method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()


@contextmanager
def mock_process(*args: str, workdir: Path) -> Iterator[Mock]:
    """The mock provider as a separate process (its own event loop and CPU time)."""
    ready = workdir / f"mock-{time.monotonic_ns()}.url"
    cmd = [PYTHON, "-m", "evaltally.mockserver", "--port", "0", "--ready-file", str(ready)]
    proc = subprocess.Popen(
        [*cmd, "--host", "127.0.0.1", *args],
        env=bench_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                _, err = proc.communicate(timeout=10)
                raise RuntimeError(f"mock server did not start: {err.decode()[-2000:]}")
            time.sleep(0.05)
        base = ready.read_text().strip()
        if "127.0.0.1" not in base:
            raise RuntimeError(f"mock server is not on loopback: {base}")
        yield Mock(base, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


def write_items(path: Path, n: int, *, prompt_chars: int = 0) -> Path:
    """n single-call items; `prompt_chars` pads the user message (to set token cost)."""
    pad = (" " + "x" * max(0, prompt_chars)) if prompt_chars else ""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            msg = {"role": "user", "content": f"question {i}{pad}"}
            fh.write(json.dumps({"id": f"q{i}", "messages": [msg]}) + "\n")
    return path


def write_config(
    workdir: Path,
    base_url: str,
    items: Path,
    *,
    name: str,
    concurrency: int,
    max_tokens: int = 16,
    samples: int = 1,
    rpm: float | None = None,
    tpm: float | None = None,
    timeout_s: float = 60.0,
) -> Path:
    limits = [f"concurrency = {concurrency}", f"timeout_s = {timeout_s}"]
    if rpm:
        limits.append(f"rpm = {rpm}")
    if tpm:
        limits.append(f"tpm = {tpm}")
    text = (
        f'[run]\nname = "{name}"\nruns_dir = "{workdir / "runs"}"\n\n'
        f'[[models]]\nkey = "m1"\nprovider = "openai"\nmodel = "{MODEL}"\n'
        f'base_url = "{base_url}/v1"\napi_key_env = "{KEY_ENV}"\n'
        f"[models.params]\ntemperature = 0.0\nmax_tokens = {max_tokens}\n"
        "[models.limits]\n" + "\n".join(limits) + "\n\n"
        f'[[benchmarks]]\nkind = "prompts"\npath = "{items}"\nsamples = {samples}\n'
    )
    path = workdir / f"{name}.toml"
    path.write_text(text)
    return path


def add_sweep_args(parser: argparse.ArgumentParser, *, reps: int) -> None:
    """The sweep the throughput benches run: --calls single-call items at --concurrency, the mock
    answering after --latency-ms, repeated --reps times."""
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--reps", type=int, default=reps)


def bench_env() -> dict[str, str]:
    """The environment of every timed process: the bench key, and bytecode caching as a user
    has it (a session that sets PYTHONDONTWRITEBYTECODE would recompile evaltally's own modules
    at every start, ~0.2 s that no installed copy pays)."""
    env = {**os.environ, KEY_ENV: FAKE_KEY}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def children_cpu() -> float:
    """CPU seconds (user + system) used so far by finished child processes: a measure much
    less moved than wall time by other jobs on a shared machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_timed(
    cmd: Sequence[str], *, timeout: float
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Whole-process wall time of a subprocess (start-up included)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        list(cmd), env=bench_env(), capture_output=True, text=True, timeout=timeout, check=False
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd[:4])}... exited {proc.returncode}:\n{proc.stderr[-3000:]}"
        )
    return wall, proc


def tally_run(config: Path, *, timeout: float) -> tuple[float, subprocess.CompletedProcess[str]]:
    return run_timed([PYTHON, "-m", "evaltally", "run", str(config)], timeout=timeout)


def naive_loop(
    base_url: str,
    items: Path,
    *,
    concurrency: int,
    max_tokens: int = 16,
    extra: Sequence[str] = (),
    timeout: float,
) -> tuple[float, dict[str, Any]]:
    """bench/naive_loop.py (AsyncOpenAI + semaphore) as a whole process: (wall s, its JSON)."""
    return _loop("naive_loop.py", base_url, items, concurrency, max_tokens, extra, timeout)


def bare_loop(
    base_url: str, items: Path, *, concurrency: int, max_tokens: int = 16, timeout: float
) -> tuple[float, dict[str, Any]]:
    """bench/bare_loop.py (aiohttp, no ledger) as a whole process: (wall s, its JSON line)."""
    return _loop("bare_loop.py", base_url, items, concurrency, max_tokens, (), timeout)


def bare_ledgered_loop(
    base_url: str, items: Path, *, concurrency: int, durable: bool = False, timeout: float
) -> tuple[float, dict[str, Any]]:
    """bench/bare_ledgered_loop.py (aiohttp + one sqlite3 writer thread) as a whole process;
    `durable`: each request waits for the commit of its start row (record before send)."""
    extra = ("--durable",) if durable else ()
    return _loop("bare_ledgered_loop.py", base_url, items, concurrency, 16, extra, timeout)


def _loop(
    script: str,
    base_url: str,
    items: Path,
    concurrency: int,
    max_tokens: int,
    extra: Sequence[str],
    timeout: float,
) -> tuple[float, dict[str, Any]]:
    cmd = [PYTHON, str(BENCH / script), "--base-url", base_url + "/v1", "--items", str(items)]
    cmd += ["--concurrency", str(concurrency), "--max-tokens", str(max_tokens), "--model", MODEL]
    wall, proc = run_timed([*cmd, *extra], timeout=timeout)
    return wall, json.loads(proc.stdout.strip().splitlines()[-1])


def run_status(run_dir: Path) -> dict[str, Any]:
    """`tally status --json` of a run: what the ledger says happened."""
    _, proc = run_timed([PYTHON, "-m", "evaltally", "status", "--json", str(run_dir)], timeout=120)
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def workdir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"evaltally-bench-{prefix}-"))


def save(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    data = {"bench": name, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), **data}
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    cells = [[str(h) for h in header]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


def tally_run_ends(
    config: Path, run_dir: Path, *, timeout: float
) -> tuple[float, bool, list[tuple[float, int | None]]]:
    """`tally run` of `config` stopped after `timeout` s: its wall time, whether it finished,
    and its finished attempts (`attempt_ends`); the run directory is removed afterwards."""
    try:
        wall, _ = tally_run(config, timeout=timeout)
        finished = True
    except subprocess.TimeoutExpired:
        wall, finished = timeout, False
    ends = attempt_ends(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    return wall, finished, ends


def attempt_ends(run_dir: Path) -> list[tuple[float, int | None]]:
    """(wall time, HTTP status) of every finished attempt in a run's ledger, in time order."""
    import sqlite3

    conn = sqlite3.connect(f"file:{run_dir / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "select at, http_status from attempts where kind = 'end' order by at"
        ).fetchall()
    finally:
        conn.close()
    return [(float(at), status) for at, status in rows]


def attempt_starts(run_dir: Path) -> list[float]:
    import sqlite3

    conn = sqlite3.connect(f"file:{run_dir / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        rows = conn.execute("select at from attempts where kind = 'start' order by at").fetchall()
    finally:
        conn.close()
    return [float(r[0]) for r in rows]
