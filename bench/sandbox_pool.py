"""DexBench verification throughput: warm workers that fork per job vs a fresh interpreter per job.

Every side verifies the same backward answers (the shipped HumanEval instances' known-good
inputs, repeated to --n jobs) with the same task file, limits and concurrency (--jobs):

- hook:  what a sweep runs, the verification hook's ``WorkerPool`` with DexBench's job (the
  literal rule in the worker, then a child of that worker's sandboxed fork server:
  ``sandbox.inline``); a ticker on the event loop records its largest lag meanwhile (the loop
  only awaits pipes);
- pool:  ``evaltally.sandbox.TaskPool`` (fork-server workers start once, preload modules, fork
  per job; what ``tally dex build`` uses);
- fresh: per job, a new sandboxed ``python -s -S -B -P worker.py`` that preloads nothing and
  runs that one job (what one-interpreter-per-answer costs).

Every side runs inside the OS boundary (bubblewrap), or with ``--sandbox process`` in the weaker
process-only mode (how the boundary's own cost is measured: the ratio of the two runs).

Prints one JSON line: jobs, wall seconds of each side, jobs per second, the ratios fresh/pool
and hook/pool, and the hook side's largest event-loop lag, measured in the same run. No network.

Usage: .venv/bin/python bench/sandbox_pool.py [--n 400] [--jobs 2] [--reps 3] [--sandbox os]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from evaltally.benchmarks.dexbench import verify
from evaltally.benchmarks.dexbench.coverage import TRACE_TASK, new_pool
from evaltally.benchmarks.dexbench.instances import Instance, load_builtin
from evaltally.benchmarks.dexbench.literals import check_arguments
from evaltally.runner.workers import WorkerPool
from evaltally.sandbox.boundary import MODES, OS, Boundary
from evaltally.sandbox.runner import TASK_ENV, TaskLimits, TaskSources, start_line, worker_command


def _instances(n: int) -> list[Instance]:
    chosen: list[Instance] = [i for i in load_builtin() if i.known_good_input]
    return [chosen[k % len(chosen)] for k in range(n)]


def _jobs(instances: list[Instance]) -> list[dict[str, Any]]:
    payloads = []
    for inst in instances:
        args = check_arguments(inst.known_good_input or "")
        call = {"entry": inst.entry_point, "args": args.source}
        payloads.append({"program": inst.program, "call": call})
    return payloads


async def _pool(payloads: list[dict[str, Any]], jobs: int, boundary: Boundary) -> float:
    started = time.perf_counter()
    async with new_pool(jobs, boundary) as pool:
        outs = await asyncio.gather(*(pool.run(TRACE_TASK, p) for p in payloads))
    assert all(o.result is not None for o in outs), [o.error for o in outs if o.error][:3]
    return time.perf_counter() - started


async def _hook(instances: list[Instance], jobs: int, mode: str) -> tuple[float, float]:
    """Wall seconds, and the largest lag of a 10 ms ticker on the event loop meanwhile."""
    lag = 0.0

    async def tick() -> None:
        nonlocal lag
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.01)
            lag = max(lag, time.perf_counter() - before - 0.01)

    ticker = asyncio.create_task(tick())
    started = time.perf_counter()
    pool = WorkerPool(jobs)
    try:
        verdicts = await asyncio.gather(
            *(pool.run(verify.job(i, i.known_good_input or "", sandbox=mode)) for i in instances)
        )
    finally:
        await pool.close()
    wall = time.perf_counter() - started
    ticker.cancel()
    assert all(v.status == "passed" for v in verdicts), [v for v in verdicts if v.reason][:3]
    return wall, lag


async def _fresh_one(payload: dict[str, Any], sem: asyncio.Semaphore, boundary: Boundary) -> None:
    job = TaskSources().job(TRACE_TASK, payload, TaskLimits())
    data = start_line(boundary, []) + json.dumps(job).encode() + b"\n"
    async with sem:
        proc = await asyncio.create_subprocess_exec(
            *worker_command(boundary),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=TASK_ENV, limit=1 << 24,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(data), 60)
    ready, reply = out.splitlines()
    assert json.loads(ready) == {"ready": True}, out[:200]
    assert "result" in json.loads(reply), out[:200]


async def _fresh(payloads: list[dict[str, Any]], jobs: int, boundary: Boundary) -> float:
    started = time.perf_counter()
    sem = asyncio.Semaphore(jobs)
    await asyncio.gather(*(_fresh_one(p, sem, boundary) for p in payloads))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--sandbox", choices=MODES, default=OS)
    args = parser.parse_args()
    boundary = Boundary(args.sandbox)
    instances = _instances(args.n)
    payloads = _jobs(instances)
    pool_s, fresh_s, hook_s, lags = [], [], [], []
    for _ in range(args.reps):
        hook_wall, lag = asyncio.run(_hook(instances, args.jobs, args.sandbox))
        hook_s.append(hook_wall)
        lags.append(lag)
        pool_s.append(asyncio.run(_pool(payloads, args.jobs, boundary)))
        fresh_s.append(asyncio.run(_fresh(payloads, args.jobs, boundary)))
    pool_m, fresh_m = statistics.median(pool_s), statistics.median(fresh_s)
    hook_m = statistics.median(hook_s)
    print(
        json.dumps(
            {
                "jobs": args.n,
                "concurrency": args.jobs,
                "sandbox": args.sandbox,
                "hook_wall_s": round(hook_m, 3),
                "pool_wall_s": round(pool_m, 3),
                "fresh_wall_s": round(fresh_m, 3),
                "hook_jobs_per_s": round(args.n / hook_m, 1),
                "pool_jobs_per_s": round(args.n / pool_m, 1),
                "fresh_jobs_per_s": round(args.n / fresh_m, 1),
                "ratio_fresh_over_pool": round(fresh_m / pool_m, 2),
                "ratio_hook_over_pool": round(hook_m / pool_m, 2),
                "hook_max_loop_lag_ms": round(1000 * max(lags), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
