"""(a) overhead and (b) latency-bound throughput of `tally run`, whole process, vs hand loops.

Three clients, each a real subprocess against the same mock provider (itself a separate process
on 127.0.0.1), same prompts and parameters: `tally run` (full ledger), the AsyncOpenAI +
semaphore loop a careful user writes (bench/naive_loop.py), and a bare aiohttp loop with no
ledger at all (bench/bare_loop.py, the physical reference). Every repetition runs all three,
rotating which goes first, so noise on this shared machine hits every side. Start-up
(interpreter, imports, config, ledger creation) is measured separately with a 1-call run.

Two more clients give the ledgered reference (bench/bare_ledgered_loop.py): the bare loop plus
one sqlite3 writer thread recording plan, request and answer rows ("ledgered"), and the same
recording before each send ("durable", what `tally run` guarantees).

(a) latency 0 ms: targets `tally run` wall <= 0.5 x the SDK loop's, and <= 1.5 x the ledgered
reference's (issue 30; the older 1.6 x the bare loop's is still printed).
(b) latency 200 ms: target `tally run` wall <= 1.05 x (start-up + ceil(N/concurrency) x latency).

Usage: .venv/bin/python bench/throughput.py [--latency-ms 0] [--calls 2000] [--reps 3]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
from pathlib import Path
from typing import Any

from _common import (
    add_sweep_args,
    bare_ledgered_loop,
    bare_loop,
    children_cpu,
    median,
    mock_process,
    naive_loop,
    run_status,
    save,
    table,
    tally_run,
    workdir,
    write_config,
    write_items,
)

TIMEOUT_S = 600.0


def _lane(args: argparse.Namespace) -> dict[str, Any]:
    return {"concurrency": args.concurrency, "rpm": args.rpm, "tpm": args.tpm}


def one_rep(
    rep: int, base_url: str, wd: Path, items: Path, one: Path, args: argparse.Namespace
) -> dict[str, Any]:
    out: dict[str, Any] = {"rep": rep}
    clients = ("tally", "loop", "bare", "ledgered", "durable")
    shift = rep % len(clients)
    order = clients[shift:] + clients[:shift]
    for who in order:
        cpu0 = children_cpu()
        if who == "tally":
            cfg = write_config(wd, base_url, items, name=f"r{rep}", **_lane(args))
            out["tally_s"], _ = tally_run(cfg, timeout=TIMEOUT_S)
            out["tally_cpu_s"] = children_cpu() - cpu0
            status = run_status(wd / "runs" / f"r{rep}")["by_model"]["m1"]
            out["tally_ok"] = status["ok"]
            cfg1 = write_config(wd, base_url, one, name=f"s{rep}", **_lane(args))
            out["tally_1_s"], _ = tally_run(cfg1, timeout=TIMEOUT_S)
            shutil.rmtree(wd / "runs", ignore_errors=True)
        elif who == "bare":
            out["bare_s"], res = bare_loop(
                base_url, items, concurrency=args.concurrency, timeout=TIMEOUT_S
            )
            out["bare_cpu_s"] = children_cpu() - cpu0
            out["bare_ok"] = res["ok"]
        elif who in ("ledgered", "durable"):
            out[f"{who}_s"], res = bare_ledgered_loop(
                base_url,
                items,
                concurrency=args.concurrency,
                durable=who == "durable",
                timeout=TIMEOUT_S,
            )
            out[f"{who}_cpu_s"] = children_cpu() - cpu0
            out[f"{who}_ok"] = res["ok"]
        else:
            out["loop_s"], res = naive_loop(
                base_url, items, concurrency=args.concurrency, timeout=TIMEOUT_S
            )
            out["loop_cpu_s"] = children_cpu() - cpu0
            out["loop_ok"] = res["ok"]
            out["loop_1_s"], _ = naive_loop(
                base_url, one, concurrency=args.concurrency, timeout=TIMEOUT_S
            )
    lat = args.latency_ms / 1000.0
    out["ratio_tally_over_loop"] = out["tally_s"] / out["loop_s"]
    out["ratio_tally_over_bare"] = out["tally_s"] / out["bare_s"]
    out["ratio_tally_over_ledgered"] = out["tally_s"] / out["ledgered_s"]
    out["ratio_tally_over_durable"] = out["tally_s"] / out["durable_s"]
    out["ratio_ledgered_over_bare"] = out["ledgered_s"] / out["bare_s"]
    out["ratio_durable_over_ledgered"] = out["durable_s"] / out["ledgered_s"]
    # The same ratios in CPU seconds of the client process (status and the 1-call run excluded).
    out["cpu_ratio_tally_over_loop"] = out["tally_cpu_s"] / out["loop_cpu_s"]
    out["cpu_ratio_tally_over_bare"] = out["tally_cpu_s"] / out["bare_cpu_s"]
    out["cpu_ratio_tally_over_ledgered"] = out["tally_cpu_s"] / out["ledgered_cpu_s"]
    out["tally_startup_s"] = max(0.0, out["tally_1_s"] - lat)
    out["ideal_s"] = math.ceil(args.calls / args.concurrency) * lat
    out["ratio_tally_over_ideal"] = out["tally_s"] / (out["tally_startup_s"] + out["ideal_s"])
    out["loop_startup_s"] = max(0.0, out["loop_1_s"] - lat)
    out["ratio_loop_over_ideal"] = out["loop_s"] / (out["loop_startup_s"] + out["ideal_s"])
    return out


def main() -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__)
    add_sweep_args(p, reps=3)
    # With an rpm the lane paces from its first request instead of ramping up as it does for a
    # limit nobody told it; a tpm also makes it estimate every request's tokens (tiktoken).
    p.add_argument("--rpm", type=float, default=None, help="lane requests/min (default: none)")
    p.add_argument("--tpm", type=float, default=None, help="lane tokens/min (default: none)")
    args = p.parse_args()
    return run(args)


def run(args: argparse.Namespace) -> dict[str, Any]:
    wd = workdir("tput")
    items = write_items(wd / "items.jsonl", args.calls)
    one = write_items(wd / "one.jsonl", 1)
    reps: list[dict[str, Any]] = []
    try:
        with mock_process("--latency-ms", str(args.latency_ms), workdir=wd) as mock:
            print(f"load average {os.getloadavg()}", flush=True)
            for rep in range(args.reps):
                mock.reset()
                reps.append(one_rep(rep, mock.base_url, wd, items, one, args))
                reps[-1]["mock_total"] = mock.stats()["total"]
                print(
                    f"rep {rep}: tally {reps[-1]['tally_s']:.2f}s loop {reps[-1]['loop_s']:.2f}s",
                    flush=True,
                )
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    keys = (
        "tally_s",
        "loop_s",
        "bare_s",
        "ledgered_s",
        "durable_s",
        "ratio_tally_over_loop",
        "ratio_tally_over_bare",
        "ratio_tally_over_ledgered",
        "ratio_tally_over_durable",
        "ratio_ledgered_over_bare",
        "ratio_durable_over_ledgered",
        "cpu_ratio_tally_over_loop",
        "cpu_ratio_tally_over_bare",
        "cpu_ratio_tally_over_ledgered",
        "tally_startup_s",
        "loop_startup_s",
        "ideal_s",
        "ratio_tally_over_ideal",
        "ratio_loop_over_ideal",
    )
    med = {k: median([r[k] for r in reps]) for k in keys}
    lat = args.latency_ms
    label = "a" if lat == 0 else "b"
    if lat == 0:
        target = "tally_s / loop_s <= 0.5 and tally_s / ledgered_s <= 1.5"
        met = med["ratio_tally_over_loop"] <= 0.5 and med["ratio_tally_over_ledgered"] <= 1.5
    else:
        target = "tally_s / (start-up + ceil(N/c) x latency) <= 1.05"
        met = med["ratio_tally_over_ideal"] <= 1.05
    print(
        table(
            [[r["rep"], *(r[k] for k in keys)] for r in reps] + [["median", *med.values()]],
            ["rep", *keys],
        )
    )
    print(
        f"({label}) N={args.calls} c={args.concurrency} latency={lat:g}ms: {target}: "
        f"{'MET' if met else 'MISSED'}"
    )
    answered = ("tally_ok", "loop_ok", "bare_ok", "ledgered_ok", "durable_ok")
    complete = all(r[k] == args.calls for r in reps for k in answered)
    if not complete:
        print("not every call was answered: see the JSON")
    met = met and complete
    result = {
        "params": vars(args),
        "reps": reps,
        "median": med,
        "target": target,
        "met": met,
        "loadavg": os.getloadavg(),
    }
    limited = "_limits" if args.rpm or args.tpm else ""
    save(f"throughput_{int(lat)}ms{limited}", result)
    return result


if __name__ == "__main__":
    main()
