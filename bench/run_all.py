"""Run the performance benchmarks and write bench/results/*.json plus a summary.

  a  2,000 calls, 0 ms latency, concurrency 64: `tally run` vs the AsyncOpenAI loop (ratio)
  b  the same at 200 ms latency: `tally run` vs start-up + ceil(N/c) x latency
  c  600 calls under a 600 requests/min mock limit, config rpm = 600 (+ the naive loop)
  d  a 1,000,000-call plan: reconcile_plan, pending_chains, peak RSS
  e  limits adopted from x-ratelimit-* headers: requests-bound and tokens-bound variants
  f  `tally view` calls pages on a 1,000,000-call ledger (builds it first: ~15 min)
  g  a sweep with `tally view` open vs without (ratio)
  h  the fixed cost of a one-call `tally run`, split at the ledger's timestamps
  m  the rate-limit matrix: every enforcement mode x window x headers x configured (~12 min)
  s  sporadic errors: 6,000 calls, 30 ms, 3 % 503 / 529 / 500 / capacity 429s vs none (ratios)
  l  a 500/s limit that says nothing plus 3 % capacity 429s: wall vs the least it allows
  r  fresh runs of 100,000 and 1,000,000 one-step calls: peak RSS, calls/s early and late
     (not in the default set: about 10 minutes)

Each benchmark runs as its own script in a subprocess, so a failure in one does not hide the
others. c and e take about 65 s per repetition (they run at a real rate limit).

Usage: .venv/bin/python bench/run_all.py [--only a,c,d] [--reps 3] [--rate-reps 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
# Upper bound for one benchmark script (all repetitions), seconds per repetition.
BUDGET_PER_REP_S = {
    "a": 180, "b": 180, "c": 240, "d": 600, "e": 200, "f": 2400, "g": 120, "h": 60, "m": 2400,
    "s": 900, "l": 300, "r": 3600,
}  # fmt: skip


def commands(which: str, reps: int, rate_reps: int) -> list[tuple[str, list[str], int]]:
    """(result file stem, argv, repetitions) for one benchmark letter."""
    py = [sys.executable]
    if which == "a":
        return [("throughput_0ms", [*py, "throughput.py", "--reps", str(reps)], reps)]
    if which == "b":
        argv = [*py, "throughput.py", "--latency-ms", "200", "--reps", str(reps)]
        return [("throughput_200ms", argv, reps)]
    if which == "c":
        argv = [*py, "ratelimit.py", "--variant", "c", "--reps", str(rate_reps)]
        return [("ratelimit_c", argv, rate_reps)]
    if which == "d":
        return [("plan_scale", [*py, "plan_scale.py", "--reps", str(reps)], reps)]
    if which == "f":
        return [("view_scale", [*py, "view_scale.py", "--reps", str(reps)], 1)]
    if which == "g":
        return [("view_readonly", [*py, "view_readonly.py", "--reps", str(reps)], reps)]
    if which == "e":
        return [
            (
                f"ratelimit_{v}",
                [*py, "ratelimit.py", "--variant", v, "--reps", str(rate_reps)],
                rate_reps,
            )
            for v in ("e-req", "e-tok")
        ]
    if which == "h":
        return [("fixed_cost", [*py, "fixed_cost.py", "--reps", str(max(reps, 5))], 1)]
    if which == "m":
        return [("rate_matrix", [*py, "rate_matrix.py"], 1)]
    if which == "r":
        return [("run_scale", [*py, "run_scale.py"], 1)]
    if which == "s":
        return [("sporadic", [*py, "sporadic.py", "--reps", str(reps)], reps)]
    if which == "l":
        return [("limit_noise", [*py, "limit_noise.py", "--reps", str(reps)], reps)]
    raise ValueError(which)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--only", default="a,b,c,d,e,f,g,h,m,s,l", help="comma-separated letters")
    p.add_argument("--reps", type=int, default=3, help="repetitions of a, b, d, f, g, s, l")
    p.add_argument("--rate-reps", type=int, default=1, help="repetitions of c, e (~65 s each)")
    args = p.parse_args()
    letters = [x.strip() for x in args.only.split(",") if x.strip()]
    bad = [x for x in letters if x not in BUDGET_PER_REP_S]
    if bad:
        p.error(f"unknown benchmark(s): {', '.join(bad)}")
    summary: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "runs": {}}
    failures = 0
    for letter in letters:
        for stem, argv, reps in commands(letter, args.reps, args.rate_reps):
            print(f"== ({letter}) {stem}: {' '.join(argv[1:])}", flush=True)
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(
                    argv, cwd=BENCH, timeout=BUDGET_PER_REP_S[letter] * max(1, reps), check=False
                )
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                rc = -1
                print(f"({letter}) {stem}: timed out", flush=True)
            entry: dict[str, Any] = {"rc": rc, "wall_s": time.perf_counter() - t0}
            path = RESULTS / f"{stem}.json"
            if rc == 0 and path.exists():
                data = json.loads(path.read_text())
                entry.update(median=data["median"], met=data["met"], target=data["target"])
            else:
                failures += 1
            summary["runs"][stem] = entry
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    print("\nsummary")
    for stem, entry in summary["runs"].items():
        verdict = {True: "MET", False: "MISSED"}.get(entry.get("met"), f"ERROR rc={entry['rc']}")
        print(f"  {stem:18s} {verdict:8s} {entry.get('target', '')}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
