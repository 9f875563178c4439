"""(g) A page left open on a running sweep does not slow it down.

The same sweep (`--calls` single-call items against the mock at `--latency-ms`, concurrency 16:
latency-bound, as a sweep against a hosted API is)
runs `--reps` times with nobody watching and `--reps` times with `tally view` serving its run and
a client asking for what the page asks for, twice as often as the page does (every second: the
overview, the first calls page and a text search). Runs alternate (without, with, without, ...)
so drift on this shared machine hits both sides. Reported: the median wall time of each side
and their ratio; `tally verify` must pass after every watched run.

Target: ratio (watched / unwatched) <= 1.10, i.e. the same speed within this machine's noise.

The view server's own CPU time is reported too: on this 2-core machine shared with other jobs,
CPU it uses is CPU the sweep does not get, whatever the locking.

Usage: .venv/bin/python bench/view_readonly.py [--calls 1000] [--latency-ms 200] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from _common import (
    PYTHON,
    bench_env,
    median,
    mock_process,
    save,
    table,
    workdir,
    write_config,
    write_items,
)

TARGET = 1.10
POLL_S = 1.0
PATHS = ("overview", "calls", "calls?q=answer")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def watch(run_dir: Path, stop: threading.Event, counts: dict[str, int]) -> None:
    """Wait for the ledger, serve it with `tally view`, and poll like an open page would."""
    while not (run_dir / "ledger.sqlite").exists() and not stop.is_set():
        time.sleep(0.01)
    ready = run_dir.parent / f"{run_dir.name}.view-url"
    cmd = [PYTHON, "-m", "evaltally", "view", str(run_dir), "--port", "0"]
    proc = subprocess.Popen([*cmd, "--ready-file", str(ready)], stdout=subprocess.DEVNULL)
    try:
        while not ready.exists() and proc.poll() is None:
            time.sleep(0.02)
        base = f"{ready.read_text().strip()}/api/runs/{run_dir.name}/"
        while not stop.is_set():
            for path in PATHS:
                with urllib.request.urlopen(base + path, timeout=60) as resp:
                    json.loads(resp.read())
                counts["requests"] += 1
            stop.wait(POLL_S)
        counts["view_cpu_s"] = cpu_seconds(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def one_run(wd: Path, base_url: str, items: Path, name: str, watched: bool) -> dict[str, Any]:
    config = write_config(wd, base_url, items, name=name, concurrency=16)
    run_dir = wd / "runs" / name
    stop = threading.Event()
    counts: dict[str, Any] = {"requests": 0, "view_cpu_s": 0.0}
    watcher = threading.Thread(target=watch, args=(run_dir, stop, counts)) if watched else None
    if watcher:
        watcher.start()
    t0 = time.perf_counter()
    proc = subprocess.run(
        [PYTHON, "-m", "evaltally", "run", str(config)],
        env=bench_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    wall = time.perf_counter() - t0
    stop.set()
    if watcher:
        watcher.join(timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"tally run failed: {proc.stderr[-2000:]}")
    verify = subprocess.run(
        [PYTHON, "-m", "evaltally", "verify", str(run_dir)], capture_output=True, check=False
    )
    return {
        "watched": watched,
        "wall_s": wall,
        "page_requests": counts["requests"],
        "view_cpu_s": counts["view_cpu_s"],
        "verified": verify.returncode == 0,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--latency-ms", type=float, default=200.0)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    wd = workdir("view-ro")
    rows: list[dict[str, Any]] = []
    try:
        items = write_items(wd / "items.jsonl", args.calls)
        with mock_process("--latency-ms", str(args.latency_ms), workdir=wd) as mock:
            for rep in range(args.reps):
                for watched in (False, True):
                    row = one_run(wd, mock.base_url, items, f"r{rep}-{int(watched)}", watched)
                    rows.append({"rep": rep, **row})
                    print(f"rep {rep} watched={watched}: {row['wall_s']:.2f} s", flush=True)
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    plain = median([r["wall_s"] for r in rows if not r["watched"]])
    watched_s = median([r["wall_s"] for r in rows if r["watched"]])
    ratio = watched_s / plain
    met = ratio <= TARGET and all(r["verified"] for r in rows)
    keys = ["rep", "watched", "wall_s", "page_requests", "view_cpu_s", "verified"]
    print(table([[r[k] for k in keys] for r in rows], keys))
    target = f"watched / unwatched wall time <= {TARGET:.2f}, every run verifies"
    print(f"(g) {plain:.2f} s unwatched, {watched_s:.2f} s watched, ratio {ratio:.3f}: "
          f"{target}: {'MET' if met else 'MISSED'}")  # fmt: skip
    save(
        "view_readonly",
        {
            "params": vars(args),
            "reps": rows,
            "median": {"unwatched_s": plain, "watched_s": watched_s, "ratio": ratio},
            "target": target,
            "met": met,
        },
    )
    sys.exit(0)


if __name__ == "__main__":
    main()
