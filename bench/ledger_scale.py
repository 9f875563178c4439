"""Scale check for the ledger: a 1,000,000-call plan written, re-reconciled and resumed.

Usage: .venv/bin/python bench/ledger_scale.py [--calls N] [--dir PATH]

Prints seconds per phase and the peak RSS of this process (resource.getrusage ru_maxrss).
The plan is shaped like a real sweep: 4 models x chains of 10 steps, 64-hex call ids, a small
spec per call; 10% of calls get a final outcome first, so the pending stream does real filtering.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from evaltally.ledger import Ledger
from evaltally.records import PlannedCall, Status, Usage

STEPS = 10
MODELS = ("model-a", "model-b", "model-c", "model-d")


def plan(n: int) -> Iterator[PlannedCall]:
    for i in range(n):
        chain = i // STEPS
        model = MODELS[chain % len(MODELS)]
        item = f"scenario-{chain // len(MODELS):06d}"
        spec = {"item": item, "step": i % STEPS, "protocol": "free_rollout", "v": 1}
        yield PlannedCall(
            call_id=hashlib.sha256(f"{model}/{item}/{i % STEPS}".encode()).hexdigest(),
            chain_id=hashlib.sha256(f"{model}/{item}".encode()).hexdigest()[:32],
            step=i % STEPS,
            model=model,
            benchmark="cte",
            item_id=item,
            sample=0,
            protocol="free_rollout",
            spec=spec,
        )


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


async def main(n: int, run_dir: Path) -> None:
    t0 = time.perf_counter()
    async with await Ledger.open(run_dir, create=True, command="bench") as ledger:
        delta = await ledger.reconcile_plan(plan(n))
        t1 = time.perf_counter()
        print(f"reconcile_plan (new, {delta.added} calls): {t1 - t0:.1f} s, rss {rss_mb():.0f} MB")
        delta = await ledger.reconcile_plan(plan(n))
        t2 = time.perf_counter()
        print(f"reconcile_plan (identical, {delta.already} known): {t2 - t1:.1f} s")
        body = b'{"messages": []}'
        h = hashlib.sha256(body).hexdigest()
        done = 0
        for call in plan(n // 10):  # first 10% of calls: attempt + outcome events
            ledger.attempt_started(call.call_id, 1, h, body)
            ledger.attempt_finished(
                call.call_id,
                1,
                http_status=200,
                error_class=None,
                error_detail=None,
                retry_after_s=None,
                response_body=b'{"ok": true}',
                usage=Usage(100, 10),
                latency_ms=12.0,
                request_id=None,
            )
            ledger.outcome(
                call.call_id,
                Status.OK,
                raw_text='{"ok": true}',
                parsed={"ok": True},
                parse_path="json",
                reason=None,
                request_hash=h,
                attempts=1,
                usage=Usage(100, 10),
                latency_ms=12.0,
            )
            done += 1
            if done % 5000 == 0:
                await asyncio.sleep(0)  # let the writer run, as a live runner would
        await ledger.flush()
        t3 = time.perf_counter()
        print(
            f"events ({done} calls x 3 rows): {t3 - t2:.1f} s ({3 * done / (t3 - t2):,.0f} rows/s)"
        )
        chains = calls = 0
        async for batch in ledger.pending_batches():  # as resume reads them: batch by batch
            chains += len(batch)
            calls += sum(len(c.calls) for c in batch)
        t4 = time.perf_counter()
        print(
            f"pending_batches ({chains} chains, {calls} calls): {t4 - t3:.1f} s, "
            f"rss {rss_mb():.0f} MB"
        )
    print(
        f"total {time.perf_counter() - t0:.1f} s; peak RSS {rss_mb():.0f} MB; "
        f"ledger {(run_dir / 'ledger.sqlite').stat().st_size / 1e6:.0f} MB"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="ledger-scale-"))
    try:
        asyncio.run(main(args.calls, base / "run"))
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    sys.exit(0)
