"""`tally regrade RUN`: verify every recorded ok answer again, from the ledger alone.

No transport is ever built, so no model is asked anything; the verdicts are appended to the
`verifications` table (the newest verdict of a call is the one export and report use), so a
changed check leaves both the old and the new verdicts on record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evaltally.benchmarks.binding import load_benchmarks
from evaltally.config.run_dir import load_run_config
from evaltally.ledger import Ledger
from evaltally.runner.verification import Verifier, check_verification, verify_recorded
from evaltally.runner.workers import WorkerPool


@dataclass
class RegradeResult:
    checked: int
    changed: int
    counts: dict[str, int] = field(default_factory=dict)


async def regrade_run(run_dir: Path, *, command: str) -> RegradeResult:
    benchmarks = load_benchmarks(load_run_config(Path(run_dir)))
    check_verification(benchmarks)
    ledger = await Ledger.open(Path(run_dir), create=False, command=command)
    pool = WorkerPool()
    verifier = Verifier(ledger, pool)
    try:
        before = await verify_recorded(ledger, verifier, benchmarks, unverified_only=False)
        await verifier.drain()
    finally:
        await verifier.cancel()
        await pool.close()
        await ledger.close()
    changed = sum(1 for cid, v in verifier.verdicts.items() if before.get(cid) != v)
    return RegradeResult(len(verifier.verdicts), changed, dict(verifier.counts))
