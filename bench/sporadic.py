"""Sporadic provider errors cost their share, not the sweep (issue 29).

Each case is one `tally run` (whole process) of --calls one-step calls at concurrency 64 against
a fresh mock provider process on 127.0.0.1 answering after --latency-ms, where --share of the
requests (drawn per body and attempt, so retries can fail again) fail with one kind of error:

  none        no faults (the reference of every ratio)
  503         503 with Retry-After: 1
  529         529 overloaded with Retry-After: 1
  500         500 without Retry-After
  429_bare    429 with Retry-After: 1 that no limit causes, saying nothing of why (no headers)
  429_left    the same 429 carrying x-ratelimit-* headers with requests left (the mock enforces
              1,000,000/min, so none of its 429s is a limit's)

Every repetition runs every case, rotating which goes first, so the shared machine's noise hits
all of them; reported per case: the median of wall / the same repetition's `none` wall.
Targets: 503, 529, 500 within max(1.5 x, +3 s) of `none`; 429_bare and 429_left within
max(3 x, +10 s). A run still going after --timeout s is stopped and reported as unfinished,
with the answers it got.

Usage: .venv/bin/python bench/sporadic.py [--calls 6000] [--latency-ms 30] [--rpm 30000]
       [--share 0.03] [--reps 1] [--only 503,429_bare]
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path
from typing import Any

from _common import (
    add_sweep_args,
    median,
    mock_process,
    save,
    table,
    tally_run_ends,
    workdir,
    write_config,
    write_items,
)

# The mock sends Retry-After: 1 on its injected 429, 503 and 529 by default.
# Case -> (the mock's fault options for a share of requests, target ratio, target extra s).
CASES: dict[str, tuple[list[str], float, float]] = {
    "none": ([], 1.0, 0.0),
    "503": (["--error-503-rate", "{share}"], 1.5, 3.0),
    "529": (["--overloaded-rate", "{share}"], 1.5, 3.0),
    "500": (["--error-500-rate", "{share}"], 1.5, 3.0),
    "429_bare": (["--error-429-rate", "{share}"], 3.0, 10.0),
    "429_left": (
        ["--error-429-rate", "{share}", "--rpm", "1000000"],
        3.0,
        10.0,
    ),
}


def run_case(
    case: str, wd: Path, items: Path, args: argparse.Namespace, tag: str
) -> dict[str, Any]:
    fault_args = [a.format(share=args.share) for a in CASES[case][0]]
    load = os.getloadavg()[0]
    with mock_process("--latency-ms", str(args.latency_ms), *fault_args, workdir=wd) as mock:
        cfg = write_config(
            wd, mock.base_url, items, name=tag, concurrency=args.concurrency, rpm=args.rpm
        )
        wall, finished, ends = tally_run_ends(cfg, wd / "runs" / tag, timeout=args.timeout)
        stats = mock.stats()
    return {
        "case": case,
        "wall_s": wall,
        "finished": finished,
        "ok": sum(1 for _, s in ends if s == 200),
        "attempts": len(ends),
        "faults": sum(stats["by_fault"].values()) if "by_fault" in stats else None,
        "load_1m": load,
    }


def verdict(case: str, wall: float, none: float, finished: bool) -> bool:
    _, ratio, extra = CASES[case]
    return finished and wall <= max(ratio * none, none + extra)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    add_sweep_args(p, reps=1)
    p.set_defaults(calls=6000, latency_ms=30.0)
    p.add_argument("--rpm", type=float, default=30000.0, help="the lane's rpm (0: none)")
    p.add_argument("--share", type=float, default=0.03, help="share of requests failing")
    p.add_argument("--only", default=",".join(c for c in CASES if c != "none"))
    p.add_argument("--timeout", type=float, default=300.0, help="stop a run after this, s")
    args = p.parse_args()
    cases = ["none", *(c for c in args.only.split(",") if c and c != "none")]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        p.error(f"unknown case(s): {', '.join(unknown)}")
    wd = workdir("sporadic")
    items = write_items(wd / "items.jsonl", args.calls)
    reps: list[dict[str, dict[str, Any]]] = []
    try:
        for rep in range(args.reps):
            order = cases[rep % len(cases) :] + cases[: rep % len(cases)]
            runs = {c: run_case(c, wd, items, args, f"r{rep}{c}") for c in order}
            for row in runs.values():
                row["ratio"] = row["wall_s"] / runs["none"]["wall_s"]
                print(
                    f"rep {rep} {row['case']:>8}: wall {row['wall_s']:.1f}s ratio "
                    f"{row['ratio']:.2f} ok {row['ok']}/{args.calls} load {row['load_1m']:.1f}",
                    flush=True,
                )
            reps.append(runs)
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    rows, med = [], {}
    for case in cases:
        walls = [r[case]["wall_s"] for r in reps]
        nones = [r["none"]["wall_s"] for r in reps]
        finished = all(r[case]["finished"] for r in reps)
        met = all(
            verdict(case, w, n, r[case]["finished"])
            for w, n, r in zip(walls, nones, reps, strict=True)
        )
        med[case] = {
            "wall_s": median(walls),
            "ratio": median([r[case]["ratio"] for r in reps]),
            "ok": min(r[case]["ok"] for r in reps),
            "finished": finished,
            "met": met,
            "load_1m": median([r[case]["load_1m"] for r in reps]),
        }
        m = med[case]
        rows.append([case, m["wall_s"], m["ratio"], m["ok"], m["load_1m"], m["met"]])
    print(table(rows, ["case", "wall_s", "ratio", "ok", "load_1m", "met"]))
    met = all(m["met"] for m in med.values())
    print(
        f"N={args.calls} c={args.concurrency} latency={args.latency_ms:g}ms: "
        f"{'MET' if met else 'MISSED'}"
    )
    target = "503/529/500 <= max(1.5 x, +3 s) of none; 429 kinds <= max(3 x, +10 s)"
    save(
        "sporadic",
        {"params": vars(args), "reps": reps, "median": med, "target": target, "met": met},
    )


if __name__ == "__main__":
    main()
