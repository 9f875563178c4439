"""(e) a fresh `tally run` of one-step calls at size: peak RSS, and calls/s early and late.

For each --calls size, one new run of that many single-call items at --concurrency against the
mock provider (its own process, 127.0.0.1, --latency-ms). A small launcher starts `tally run`,
samples the child's RSS every --sample-s and reports its own peak RSS (os.wait4), so nothing of
this script counts. From the ledger afterwards: calls/s over the first and the last --window
outcomes (by their `at` time), and the RSS curve against calls done: the largest RSS sampled
before the first --window outcomes were recorded, and the largest after. Target (issue 30):
peak RSS independent of the run's size past the first 100,000 calls (the two peaks equal).

Usage: .venv/bin/python bench/run_scale.py [--calls 100000,1000000] [--concurrency 256]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

from _common import PYTHON, bench_env, mock_process, save, table, workdir, write_config, write_items

LAUNCHER = """
import json, os, subprocess, sys, time
every = float(sys.argv[1])
proc = subprocess.Popen([sys.executable, "-m", "evaltally", *sys.argv[2:]],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
samples = []
while True:
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid:
        break
    try:
        with open(f"/proc/{proc.pid}/status") as fh:
            kb = next(int(l.split()[1]) for l in fh if l.startswith("VmRSS"))
        samples.append((time.time(), kb))
    except (OSError, StopIteration):
        pass
    time.sleep(every)
print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss, samples]))
"""


def _rate(ats: list[float]) -> float:
    return (len(ats) - 1) / (ats[-1] - ats[0]) if len(ats) > 1 and ats[-1] > ats[0] else 0.0


def _rss_curve(samples: list[tuple[float, int]], ats: list[float], window: int) -> dict[str, float]:
    """The largest RSS sampled before the first `window` outcomes were recorded (planning
    included), and the largest after: equal when memory does not grow with the run's size."""
    split = ats[window - 1] if len(ats) >= window else float("inf")
    early = [kb for t, kb in samples if t <= split]
    late = [kb for t, kb in samples if t > split]
    return {
        "rss_first_window_mb": max(early, default=0) / 1024,
        "rss_after_mb": max(late, default=0) / 1024,
    }


def one_size(n: int, base_url: str, wd: Path, args: argparse.Namespace) -> dict[str, Any]:
    items = write_items(wd / f"items{n}.jsonl", n)
    config = write_config(wd, base_url, items, name=f"n{n}", concurrency=args.concurrency)
    t0 = time.perf_counter()
    done = subprocess.run(
        [PYTHON, "-c", LAUNCHER, str(args.sample_s), "run", str(config)],
        env=bench_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=args.timeout,
    )
    wall = time.perf_counter() - t0
    code, rss_kb, samples = json.loads(done.stdout)
    db_path = wd / "runs" / f"n{n}" / "ledger.sqlite"
    db = sqlite3.connect(db_path)
    try:
        ats = [a for (a,) in db.execute("SELECT at FROM outcomes ORDER BY seq")]
        ok = db.execute("SELECT COUNT(*) FROM outcomes WHERE status = 'ok'").fetchone()[0]
    finally:
        db.close()
    ledger_mb = sum(p.stat().st_size for p in db_path.parent.glob("ledger.sqlite*")) / 2**20
    out = {
        "calls": n,
        "exit": code,
        "ok": ok,
        "wall_s": wall,
        "peak_rss_mb": rss_kb / 1024,
        "ledger_mb": ledger_mb,
        "first_window_calls_per_s": _rate(ats[: args.window]),
        "last_window_calls_per_s": _rate(ats[-args.window :]),
        **_rss_curve(samples, ats, args.window),
        "loadavg_1m": os.getloadavg()[0],
    }
    shutil.rmtree(wd / "runs", ignore_errors=True)
    items.unlink()
    return out


def main() -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--calls", default="100000,1000000", help="comma-separated run sizes")
    p.add_argument("--concurrency", type=int, default=256)
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--window", type=int, default=100_000, help="calls per rate window")
    p.add_argument("--timeout", type=float, default=3600.0)
    p.add_argument("--sample-s", type=float, default=1.0, help="seconds between RSS samples")
    args = p.parse_args()
    sizes = [int(s) for s in args.calls.split(",") if s]
    wd = workdir("runscale")
    rows: list[dict[str, Any]] = []
    try:
        with mock_process("--latency-ms", str(args.latency_ms), workdir=wd) as mock:
            for n in sizes:
                rows.append(one_size(n, mock.base_url, wd, args))
                print(rows[-1], flush=True)
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    keys = list(rows[0])
    print(table([[r[k] for k in keys] for r in rows], keys))
    result = {"params": vars(args), "sizes": rows}
    save("run_scale", result)
    return result


if __name__ == "__main__":
    main()
