"""Real processes: the run lock, and a kill -9 in the middle of a stream of events."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

from evaltally.errors import RunLockedError
from evaltally.ledger import Ledger, run_status, verify_run

HERE = Path(__file__).parent

HOLDER = """
import asyncio, sys, time
from pathlib import Path
from evaltally.ledger import Ledger

async def main() -> None:
    await Ledger.open(Path(sys.argv[1]), create=True, command="tally run holder.toml")
    print("ready", flush=True)
    time.sleep(120)

asyncio.run(main())
"""

WRITER = """
import asyncio, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from ledger_testkit import answer, body, calls, finish
from evaltally.ledger import Ledger

async def main() -> None:
    plan = calls(4000)
    ledger = await Ledger.open(Path(sys.argv[1]), create=True, command="writer")
    await ledger.reconcile_plan(plan)
    for call in plan[:1000]:
        answer(ledger, call.call_id)
    await ledger.flush()
    print("flushed 1000", flush=True)
    for call in plan[1000:]:  # keeps streaming, with requests in flight, until killed
        raw, h = body(call.call_id)
        ledger.attempt_started(call.call_id, 1, h, raw)
        await asyncio.sleep(0.002)
        finish(ledger, call.call_id)
    await asyncio.sleep(120)

asyncio.run(main())
"""


def spawn(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)


def read_line(stream: IO[str] | None) -> str:
    assert stream is not None
    return stream.readline().strip()


def kill9(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.stdout is not None
    proc.stdout.close()


async def test_second_process_is_refused_and_kill9_releases_the_lock(tmp_path: Path) -> None:
    run = tmp_path / "run"
    holder = spawn(HOLDER, str(run))
    try:
        assert read_line(holder.stdout) == "ready"
        with pytest.raises(RunLockedError) as err:
            await Ledger.open(run, create=False, command="tally resume")
        msg = str(err.value)
        assert f"run {run} is already being driven by another process (pid {holder.pid}" in msg
        assert "tally run holder.toml" in msg and "wait for it or stop it" in msg
        assert run_status(run).live is not None  # status works while another process drives
    finally:
        kill9(holder)
    async with await Ledger.open(run, create=False, command="tally resume") as ledger:
        assert ledger.session == 2  # the killed holder's session is on record
        with pytest.raises(RunLockedError):  # the lock also holds within one process
            await Ledger.open(run, create=False, command="again")


async def test_kill9_mid_stream_leaves_a_consistent_ledger(tmp_path: Path) -> None:
    run = tmp_path / "run"
    writer = spawn(WRITER, str(run), str(HERE))
    try:
        assert read_line(writer.stdout) == "flushed 1000"
        await asyncio.sleep(0.5)  # let it commit a few more batches, then kill it mid-stream
    finally:
        kill9(writer)
    status = run_status(run)
    assert status.overall.planned == 4000 and 1000 < status.overall.ok < 4000
    # Whole events only: every committed outcome has its attempt rows, and nothing but the
    # attempts in flight at the kill is open.
    report = verify_run(run)
    assert not report.violations, report.violations
    opened = [f for f in report.interruptions if "started but has no end" in f]
    assert opened, "the kill should have left attempts in flight"
    assert report.verdict == "interrupted"
    async with await Ledger.open(run, create=False, command="tally resume") as ledger:
        open_attempts = await ledger.mark_interrupted()
        assert open_attempts == len(opened)
        chains = await ledger.pending_chains()
        assert len(chains) == 4000 - status.overall.ok
        assert ledger.session == 2
    report = verify_run(run)
    assert report.ok, report.violations
