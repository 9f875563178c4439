"""Chain steps answered after a later step of their chain was.

A chain that carries on past a failed step (CTE's `on_failed_step = "continue"`) sends the later
steps with the failed one shown as having no answer; a resume may then answer the failed step.
Its answer is then one no later step saw, and a grader that scores the chain as the model ran
it needs to know (docs/export.md, `answered_after_later_steps`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from evaltally.ledger.current import CURRENT_OUTCOME, PLANNED
from evaltally.ledger.files import connect_ro, ledger_path, translate

_QUERY = (
    f"SELECT p.chain_id, p.call_id, o.seq, o.status FROM {PLANNED} p\n"
    + CURRENT_OUTCOME
    + "ORDER BY p.chain_id, p.step DESC"
)


def answered_after_later_steps(run_dir: Path) -> set[str]:
    """The call ids whose current outcome was recorded after the current outcome of a later
    step of their chain that was sent (blocked steps were never sent, so they saw nothing)."""
    path = ledger_path(Path(run_dir))
    conn = connect_ro(path)
    late: set[str] = set()
    chain: str | None = None
    earliest_later: int | None = None  # smallest outcome seq among the later sent steps
    try:
        for chain_id, call_id, seq, status in conn.execute(_QUERY):
            if chain_id != chain:
                chain, earliest_later = chain_id, None
            if seq is None:
                continue
            if earliest_later is not None and earliest_later < seq:
                late.add(call_id)
            if status != "blocked":
                earliest_later = seq if earliest_later is None else min(earliest_later, seq)
    except sqlite3.Error as exc:
        raise translate(exc, path, "read the chains' answer order") from exc
    finally:
        conn.close()
    return late
