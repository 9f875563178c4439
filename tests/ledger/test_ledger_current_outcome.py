"""One "current outcome" of a call (ledger/current.py): status, export, resume's pending work,
the answers to verify and `tally verify` agree on it, across retries, resumes and outcomes that
a later one supersedes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ledger_testkit import answer, body, calls, new_run

from evaltally.ledger import Ledger, export_rows, run_status, verify_run
from evaltally.ledger.pending import PendingStream, count_pending
from evaltally.ledger.verifications import answers_to_verify
from evaltally.records import Status

PLAN = calls(7) + calls(1, 2, bench="b2")
C = [c.call_id for c in PLAN]


def blocked(ledger: Ledger, call_id: str) -> None:
    ledger.outcome(
        call_id,
        Status.BLOCKED,
        raw_text=None,
        parsed=None,
        parse_path=None,
        reason="an earlier step failed",
        request_hash=None,
        attempts=0,
        usage=None,
        latency_ms=None,
    )


async def record_two_sessions(tmp_path: Path) -> Path:
    async with await new_run(tmp_path, PLAN) as ledger:
        answer(ledger, C[0])  # ok at once
        answer(ledger, C[1], Status.FAILED, attempt=3, http=503)  # retried, then gave up
        blocked(ledger, C[2])
        answer(ledger, C[3], Status.FAILED, http=500)
        answer(ledger, C[4], Status.PARSE_ERROR)
        raw, h = body(C[5])
        ledger.attempt_started(C[5], 1, h, raw)  # the process is killed mid-call
        answer(ledger, C[7])  # a two-step chain: step 0 answered, step 1 fails
        answer(ledger, C[8], Status.FAILED, http=502)
    run_dir = tmp_path / "run"
    async with await Ledger.open(run_dir, create=False, command="pytest resume") as ledger:
        await ledger.mark_interrupted()
        answer(ledger, C[1], attempt=4)  # the resume supersedes the failed outcome
        answer(ledger, C[2])  # and the blocked one
        answer(ledger, C[3], Status.FAILED, attempt=2, http=500)  # fails again: still failed
    return run_dir


def readers(run_dir: Path) -> dict[str, dict[str, str]]:
    """Each reader's view, call id -> status (export and status), or -> "done"/"pending"
    (resume's pending stream and counts, the answers to verify: "ok" or absent)."""
    path = run_dir / "ledger.sqlite"
    stream = PendingStream(path, batch_calls=4)
    try:
        chains = [chain for batch in iter(stream.next_batch, []) for chain in batch]
    finally:
        stream.close()
    pending = {c.call_id for ch in chains for c in ch.calls if c.step not in ch.recorded}
    counted = sum(n.calls for n in count_pending(path, None).values())
    assert counted == len(pending)
    to_verify = answers_to_verify(path, ("b1", "b2"), unverified_only=False)
    return {
        "export": {r["call_id"]: r["status"] for r in export_rows(run_dir)},
        "pending": {c: "pending" if c in pending else "done" for c in C},
        "to_verify": {v.call.call_id: "ok" for v in to_verify},
    }


def status_counts(run_dir: Path) -> Counter[str]:
    st = run_status(run_dir, probe_lock=False).overall
    counts = Counter(ok=st.ok, parse_error=st.parse_error, failed=st.failed, blocked=st.blocked)
    counts["unfinished"] = st.unfinished
    return +counts


def assert_agree(run_dir: Path, current: dict[str, str]) -> None:
    seen = readers(run_dir)
    assert seen["export"] == current
    assert status_counts(run_dir) == Counter(current.values())
    done = {c: "done" if s in ("ok", "parse_error") else "pending" for c, s in current.items()}
    assert seen["pending"] == done
    assert seen["to_verify"] == {c: "ok" for c, s in current.items() if s == "ok"}


CURRENT: dict[str, str] = {
    C[0]: "ok",
    C[1]: "ok",
    C[2]: "ok",
    C[3]: "failed",
    C[4]: "parse_error",
    C[5]: "unfinished",
    C[6]: "unfinished",
    C[7]: "ok",
    C[8]: "failed",
}


async def test_every_reader_takes_the_latest_outcome_as_current(tmp_path: Path) -> None:
    run_dir = await record_two_sessions(tmp_path)
    assert_agree(run_dir, CURRENT)
    assert verify_run(run_dir).ok  # the history is intact: nothing follows a final outcome


async def test_an_outcome_after_a_final_one_is_current_for_every_reader(tmp_path: Path) -> None:
    """A re-sent answer (verify's violation) is seen the same way by every reader: resume
    does not take the call for done while status and export show it failed."""
    run_dir = await record_two_sessions(tmp_path)
    async with await Ledger.open(run_dir, create=False, command="pytest") as ledger:
        answer(ledger, C[0], Status.FAILED, attempt=2, http=500)
    assert_agree(run_dir, {**CURRENT, C[0]: "failed"})
    report = verify_run(run_dir)
    assert any("after the call's final outcome" in v for v in report.violations)
