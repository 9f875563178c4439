"""Where `tally run`'s time beyond the bare aiohttp loop goes (issue 14: 2,000 calls at 0 ms in
at most 1.6 x the bare loop), measured by switching named parts off.

Against one mock provider (its own process, 127.0.0.1), each repetition runs, in rotating
order, the bare loop (bench/bare_loop.py) and `tally run` of the same calls in five variants
that differ only in what bench/_tally_without.py switches off inside the `tally` process:

  full        `tally run` as shipped
  no_inserts  attempt and outcome rows built and hash-chained, but never inserted into SQLite
  no_rows     no attempt or outcome rows (the plan, the session and checkpoints are still written)
  no_ramp     a lane that knows no limit sends unpaced from its first request
  neither     no rows and no ramp
  no_durable  requests and answers do not wait for their rows' commit (record before send off)

The variants are measurements, not configurations: without its rows a run can be neither
resumed nor exported, and without the ramp an unknown limit meets the whole concurrency at once.
Reported per variant: the median wall time, its ratio to the bare loop's median, and
`over_budget_s`: how far what `tally run` adds beyond the bare loop exceeds the 0.6 x bare loop
the 1.6 x target leaves it (<= 0: that variant would meet the target).

Usage: .venv/bin/python bench/cost_split.py [--calls 2000] [--reps 10] [--latency-ms 0]
       [--variants full,no_durable]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from _common import (
    BENCH,
    PYTHON,
    add_sweep_args,
    bare_loop,
    median,
    mock_process,
    run_timed,
    save,
    table,
    workdir,
    write_config,
    write_items,
)

TIMEOUT_S = 600.0
TARGET = 1.6
VARIANTS = {
    "full": "-",
    "no_inserts": "inserts",
    "no_rows": "rows",
    "no_ramp": "ramp",
    "neither": "rows,ramp",
    "no_durable": "durable",
}


def _tally(parts: str, config: Path) -> float:
    cmd = [PYTHON, str(BENCH / "_tally_without.py"), parts, "run", str(config)]
    wall, _ = run_timed(cmd, timeout=TIMEOUT_S)
    return wall


def one_rep(
    rep: int, base_url: str, wd: Path, items: Path, args: argparse.Namespace
) -> dict[str, float]:
    clients = ["bare", *args.variants]
    shift = rep % len(clients)
    out: dict[str, float] = {}
    for who in clients[shift:] + clients[:shift]:
        if who == "bare":
            out["bare"], _ = bare_loop(
                base_url, items, concurrency=args.concurrency, timeout=TIMEOUT_S
            )
            continue
        config = write_config(wd, base_url, items, name=f"{who}{rep}", concurrency=args.concurrency)
        out[who] = _tally(VARIANTS[who], config)
        shutil.rmtree(wd / "runs", ignore_errors=True)
    return out


def main() -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__)
    add_sweep_args(p, reps=10)
    p.add_argument(
        "--variants",
        type=lambda text: [v for v in text.split(",") if v],
        default=list(VARIANTS),
        help=f"comma-separated, of: {', '.join(VARIANTS)}",
    )
    args = p.parse_args()
    unknown = set(args.variants) - set(VARIANTS)
    if unknown:
        p.error(f"unknown variants {sorted(unknown)}; known: {', '.join(VARIANTS)}")
    wd = workdir("split")
    items = write_items(wd / "items.jsonl", args.calls)
    reps: list[dict[str, float]] = []
    try:
        with mock_process("--latency-ms", str(args.latency_ms), workdir=wd) as mock:
            for rep in range(args.reps):
                reps.append(one_rep(rep, mock.base_url, wd, items, args))
                cells = "  ".join(f"{k} {v:.3f}" for k, v in reps[-1].items())
                print(f"rep {rep}: {cells}", flush=True)
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    bare = median([r["bare"] for r in reps])
    budget = (TARGET - 1.0) * bare
    rows = [("bare", bare, 1.0, 0.0, float("nan"))]
    summary: dict[str, Any] = {"bare_s": bare, "budget_s": budget}
    for name in args.variants:
        wall = median([r[name] for r in reps])
        added = wall - bare
        rows.append((name, wall, wall / bare, added, added - budget))
        summary[name] = {"wall_s": wall, "ratio_over_bare": wall / bare, "added_s": added}
    print(table(rows, ("client", "wall_s", "over_bare", "added_s", "over_budget_s")))
    print(f"budget for what `tally run` adds at {TARGET} x the bare loop: {budget:.3f} s")
    data = {"args": vars(args), "reps": reps, "median": summary, "target": f"<= {TARGET} x bare"}
    save("cost_split", data)
    return data


if __name__ == "__main__":
    main()
