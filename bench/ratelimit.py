"""(c) pacing under a configured limit and (e) limits adopted from x-ratelimit-* headers.

The mock provider (its own process, 127.0.0.1) enforces requests/min and tokens/min with 429 +
Retry-After the way hosted providers do (one-second burst). The judge is the mock's /stats
(`by_status`) and the run's own ledger (attempt end times).

Variants:
  c        mock --rpm 600; config rpm = 600; 600 calls. Targets: 600 answered, process wall
           within 5% of 60 s, <= 3 responses of 429. The naive SDK loop (AsyncOpenAI, default
           max_retries) runs against the same limit for contrast.
  e-req    mock --rpm 600 --tpm 200000; config gives NO rpm/tpm; short prompts, max_tokens 16
           (~25 tokens per request): requests/min binds. 650 calls.
  e-tok    same mock; max_tokens 500 (~506 tokens per request as the mock charges them:
           prompt estimate + max_tokens): tokens/min binds at ~395 requests/min. 430 calls.
           Targets (e): steady-state throughput >= 95% of the binding limit, 429s < 1% of
           requests.

Steady state = answered requests whose attempt ended after the first 5 s of the run, divided
by the time from there to the last answer (the opening one-second burst is excluded, so the
rate is not flattered by it).

Usage: .venv/bin/python bench/ratelimit.py --variant c|e-req|e-tok [--reps 1]
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

from _common import (
    attempt_ends,
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

VARIANTS: dict[str, dict[str, Any]] = {
    "c": {"mock": ("--rpm", "600"), "rpm": 600, "calls": 600, "max_tokens": 16, "naive": True},
    "e-req": {"mock": ("--rpm", "600", "--tpm", "200000"), "calls": 650, "max_tokens": 16},
    "e-tok": {"mock": ("--rpm", "600", "--tpm", "200000"), "calls": 430, "max_tokens": 500},
}
RPM, TPM = 600, 200000
WARMUP_S = 5.0
TIMEOUT_S = 300.0


def steady_rate(ends: list[tuple[float, int | None]]) -> tuple[float, float, int]:
    """(answered per minute after the warm-up, span of the whole run in s, answered)."""
    if not ends:
        return 0.0, 0.0, 0
    t0 = ends[0][0]
    ok = [t for t, s in ends if s == 200]
    late = [t for t in ok if t >= t0 + WARMUP_S]
    span = ends[-1][0] - t0
    if len(late) < 2:
        return 0.0, span, len(ok)
    return (len(late) - 1) / (late[-1] - late[0]) * 60.0, span, len(ok)


def one_rep(rep: int, name: str, v: dict[str, Any], wd: Path) -> dict[str, Any]:
    items = write_items(wd / "items.jsonl", v["calls"])
    out: dict[str, Any] = {"rep": rep}
    with mock_process(*v["mock"], workdir=wd) as mock:
        cfg = write_config(
            wd,
            mock.base_url,
            items,
            name=f"{name}-{rep}",
            concurrency=64,
            max_tokens=v["max_tokens"],
            rpm=v.get("rpm"),
        )
        out["tally_s"], _ = tally_run(cfg, timeout=TIMEOUT_S)
        run_dir = wd / "runs" / f"{name}-{rep}"
        stats = mock.stats()
        status = run_status(run_dir)["by_model"]["m1"]
        ends = attempt_ends(run_dir)
        rate, span, answered = steady_rate(ends)
        out.update(
            ok=status["ok"],
            failed=status["failed"],
            requests=stats["total"],
            r429=stats["by_status"].get("429", 0),
            span_s=span,
            steady_rpm=rate,
        )
        t0 = ends[0][0] if ends else 0.0
        late429 = [round(t - t0, 2) for t, st in ends if st == 429 and t - t0 >= 2.0]
        out["r429_first_2s"] = out["r429"] - len(late429)
        out["r429_later_at_s"] = late429[:50]
        out["pct_429"] = 100.0 * out["r429"] / max(1, out["requests"])
        per_req = stats["prompt_tokens"] / max(1, answered) + v["max_tokens"]
        out["tokens_per_request"] = per_req
        out["steady_tpm"] = rate * per_req
        binding_rpm = min(RPM, TPM / per_req) if "--tpm" in v["mock"] else RPM
        out["binding"] = "tokens" if binding_rpm < RPM else "requests"
        out["pct_of_limit"] = 100.0 * rate / binding_rpm
        if v.get("naive"):
            time.sleep(2.0)  # let the mock's one-second bucket refill
            mock.reset()
            out["loop_s"], res = naive_loop(
                mock.base_url,
                items,
                concurrency=64,
                max_tokens=v["max_tokens"],
                timeout=TIMEOUT_S,
            )
            nstats = mock.stats()
            out.update(
                loop_ok=res["ok"],
                loop_errors=res["errors"],
                loop_requests=nstats["total"],
                loop_429=nstats["by_status"].get("429", 0),
            )
    shutil.rmtree(wd / "runs", ignore_errors=True)
    return out


def run(variant: str, reps: int) -> dict[str, Any]:
    v = VARIANTS[variant]
    wd = workdir(f"rl-{variant}")
    rows: list[dict[str, Any]] = []
    try:
        for rep in range(reps):
            rows.append(one_rep(rep, variant, v, wd))
            print(f"rep {rep}: {rows[-1]}", flush=True)
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    keys = ["tally_s", "span_s", "ok", "requests", "r429", "pct_429", "steady_rpm", "pct_of_limit"]
    if v.get("naive"):
        keys += ["loop_s", "loop_ok", "loop_requests", "loop_429"]
    med = {k: median([r[k] for r in rows]) for k in keys}
    if variant == "c":
        target = "all 600 ok, |wall/60 - 1| <= 5%, <= 3 x 429"
        met = all(
            r["ok"] == v["calls"] and abs(r["tally_s"] / 60 - 1) <= 0.05 and r["r429"] <= 3
            for r in rows
        )
    else:
        target = "steady throughput >= 95% of the binding limit, 429 < 1% of requests"
        met = all(r["pct_of_limit"] >= 95 and r["pct_429"] < 1 and r["failed"] == 0 for r in rows)
    print(
        table(
            [[r["rep"], *(r[k] for k in keys)] for r in rows] + [["median", *med.values()]],
            ["rep", *keys],
        )
    )
    print(f"({variant}) binding: {rows[0]['binding']}; {target}: {'MET' if met else 'MISSED'}")
    result = {
        "variant": variant,
        "params": v,
        "reps": rows,
        "median": med,
        "target": target,
        "met": met,
    }
    save(f"ratelimit_{variant}", result)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--variant", choices=sorted(VARIANTS), default="c")
    p.add_argument("--reps", type=int, default=1)
    args = p.parse_args()
    run(args.variant, args.reps)


if __name__ == "__main__":
    main()
