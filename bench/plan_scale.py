"""(d) a 1,000,000-call plan: writing it to the ledger, and computing what remains on resume.

The plan is the real one: a `prompts` benchmark of 100,000 items x samples = 10 (use
`--samples 100` for a 10,000,000-call plan with the same items), expanded by
`evaltally.plan.iter_plan` from a config loaded with `load_config`, exactly as `tally run` does.
Each phase runs in its own fresh process, so its peak RSS (resource.getrusage ru_maxrss) is its
own:

  plan    Ledger.open(create) + record_plan(plan_rows(...)) + close        (a new run)
  resume  Ledger.open + record_plan (identical plan) + mark_interrupted
          + pending_counts + the first batch of pending_batches            (what `tally resume`
                                                                            does before sending)
          then the rest of the pending stream, batch by batch, dropping each one (the scheduler
          holds at most about two batches more: runner/feed.py)

"resume planning" is everything before the first call could be sent. Targets: plan write plus
resume planning under 30 s together (1,000,000 calls); peak RSS under 1 GB at any size.
No network is used (the model's base_url is never contacted).

Usage: .venv/bin/python bench/plan_scale.py [--items 100000] [--samples 10] [--reps 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import PYTHON, median, save, table, workdir, write_items

TIMEOUT_S = 3600.0


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


async def phase(name: str, config_path: Path) -> dict[str, Any]:
    from evaltally.benchmarks.binding import load_benchmarks
    from evaltally.config import load_config
    from evaltally.ledger import Ledger
    from evaltally.plan import iter_plan

    try:
        from evaltally.plan import plan_rows
    except ImportError:  # a "before" tree (PYTHONPATH) older than plan_rows
        plan_rows = None

    out: dict[str, Any] = {"phase": name, "rss_start_mb": rss_mb()}
    t0 = time.perf_counter()
    config = load_config(config_path)
    benchmarks = load_benchmarks(config)
    out["load_s"] = time.perf_counter() - t0
    ledger = await Ledger.open(config.run_dir, create=name == "plan", command=f"bench {name}")
    try:
        t1 = time.perf_counter()
        if plan_rows is None:
            delta = await ledger.reconcile_plan(iter_plan(config, benchmarks))
        else:  # as run/session.py records it
            delta = await ledger.record_plan(lambda: plan_rows(config, benchmarks))
        out["reconcile_s"] = time.perf_counter() - t1
        out["planned"] = delta.total
        out["added"] = delta.added
        out["rss_after_reconcile_mb"] = rss_mb()
        if name == "resume":
            t2 = time.perf_counter()
            out["interrupted"] = await ledger.mark_interrupted()
            out["mark_interrupted_s"] = time.perf_counter() - t2
            t3 = time.perf_counter()
            counts = await ledger.pending_counts()
            out["counts_s"] = time.perf_counter() - t3
            out["counted_calls"] = sum(c.calls for c in counts.values())
            await stream_pending(ledger, out)
            out["planning_s"] = (
                out["reconcile_s"] + out["mark_interrupted_s"] + out["counts_s"]
            ) + out["first_batch_s"]
    finally:
        t4 = time.perf_counter()
        await ledger.close()
        out["close_s"] = time.perf_counter() - t4
    out["total_s"] = time.perf_counter() - t0
    out["peak_rss_mb"] = rss_mb()
    return out


async def stream_pending(ledger: Any, out: dict[str, Any]) -> None:
    t0 = time.perf_counter()
    chains = calls = largest = 0
    out["first_batch_s"] = 0.0
    async for batch in ledger.pending_batches():
        if not chains:
            out["first_batch_s"] = time.perf_counter() - t0
        chains += len(batch)
        size = sum(len(c.calls) for c in batch)
        calls += size
        largest = max(largest, size)
        del batch
    out["stream_s"] = time.perf_counter() - t0
    out["pending_chains"] = chains
    out["pending_calls"] = calls
    out["largest_batch_calls"] = largest


def write_setup(wd: Path, n_items: int, samples: int) -> Path:
    items = write_items(wd / "items.jsonl", n_items)
    text = (
        f'[run]\nname = "scale"\nruns_dir = "{wd / "runs"}"\n\n'
        '[[models]]\nkey = "m1"\nprovider = "openai"\nmodel = "bench-model"\n'
        'base_url = "http://127.0.0.1:9/v1"\napi_key_env = "EVALTALLY_BENCH_KEY"\n'
        "[models.params]\ntemperature = 0.0\nmax_tokens = 16\n"
        "[models.limits]\nconcurrency = 64\n\n"
        f'[[benchmarks]]\nkind = "prompts"\npath = "{items}"\nsamples = {samples}\n'
    )
    cfg = wd / "scale.toml"
    cfg.write_text(text)
    return cfg


def run_phase(name: str, cfg: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [PYTHON, str(Path(__file__).resolve()), "--phase", name, "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"phase {name} failed:\n{proc.stderr[-3000:]}")
    data: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data


def run(n_items: int, samples: int, reps: int) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for rep in range(reps):
        wd = workdir("scale")
        try:
            cfg = write_setup(wd, n_items, samples)
            plan = run_phase("plan", cfg)
            resume = run_phase("resume", cfg)
            db = wd / "runs" / "scale" / "ledger.sqlite"
            size = sum(p.stat().st_size for p in db.parent.glob("ledger.sqlite*"))
        finally:
            shutil.rmtree(wd, ignore_errors=True)
        row = {
            "rep": rep,
            "planned": plan["planned"],
            "plan_reconcile_s": plan["reconcile_s"],
            "plan_total_s": plan["total_s"],
            "plan_peak_mb": plan["peak_rss_mb"],
            "resume_reconcile_s": resume["reconcile_s"],
            "counts_s": resume["counts_s"],
            "first_batch_s": resume["first_batch_s"],
            "planning_s": resume["planning_s"],
            "plan_plus_planning_s": plan["reconcile_s"] + resume["planning_s"],
            "stream_s": resume["stream_s"],
            "pending_calls": resume["pending_calls"],
            "resume_total_s": resume["total_s"],
            "resume_peak_mb": resume["peak_rss_mb"],
            "ledger_mb": size / 2**20,
            "plan_phase": plan,
            "resume_phase": resume,
        }
        rows.append(row)
        print(
            f"rep {rep}: plan {plan['reconcile_s']:.1f}s, planning {resume['planning_s']:.1f}s, "
            f"stream {resume['stream_s']:.1f}s, "
            f"peak {max(plan['peak_rss_mb'], resume['peak_rss_mb']):.0f} MB",
            flush=True,
        )
    keys = [
        "planned",
        "plan_reconcile_s",
        "plan_peak_mb",
        "resume_reconcile_s",
        "counts_s",
        "first_batch_s",
        "planning_s",
        "plan_plus_planning_s",
        "stream_s",
        "resume_total_s",
        "resume_peak_mb",
        "ledger_mb",
    ]
    med = {k: median([r[k] for r in rows]) for k in keys}
    met = all(
        r["plan_plus_planning_s"] < 30 and max(r["plan_peak_mb"], r["resume_peak_mb"]) < 1024
        for r in rows
    )
    target = "plan write + resume planning < 30 s, peak RSS < 1 GB"
    print(
        table(
            [[r["rep"], *(r[k] for k in keys)] for r in rows] + [["median", *med.values()]],
            ["rep", *keys],
        )
    )
    print(f"(d) {n_items} items x {samples} samples: {target}: {'MET' if met else 'MISSED'}")
    result = {
        "params": {"items": n_items, "samples": samples, "reps": reps},
        "reps": rows,
        "median": med,
        "target": target,
        "met": met,
    }
    calls = n_items * samples
    save("plan_scale" if calls == 1_000_000 else f"plan_scale_{calls}", result)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--phase", choices=("plan", "resume"), help=argparse.SUPPRESS)
    p.add_argument("--config", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.phase:
        print(json.dumps(asyncio.run(phase(args.phase, args.config))))
        sys.exit(0)
    run(args.items, args.samples, args.reps)


if __name__ == "__main__":
    main()
