"""The current outcome of a planned call: the one definition every read uses (status, export,
resume's pending work, verification, the view, late steps).

Outcomes are appended, never updated. A call that failed or was blocked gets a new outcome row
when a resume sends it again, and that row supersedes the old one: a call's current outcome is
its latest outcome row. A final outcome (ok, parse_error) is never re-sent, so nothing follows
it; `tally verify` reports a ledger where something does (ledger/verify.py). A call is done when
its current outcome is final.

SQL fragments rather than a view: a view would have to be created by a migration, and a ledger
written before it (tests/fixtures/ledger-v1) is read read-only, without being upgraded. Every
fragment seeks a call's rows on the outcomes_call index (call_id, status; the seq is the rowid
it carries), so its cost follows the call's own few rows, never the table.
"""

from __future__ import annotations

FINAL = "('ok', 'parse_error')"
"""The final statuses, as an SQL list (records.Status.is_final)."""


def current_seq(call_id: str) -> str:
    """SQL: the seq of the current outcome of the call whose id is the expression `call_id`
    (NULL when the call has no outcome)."""
    return f"(SELECT max(cur.seq) FROM outcomes cur WHERE cur.call_id = {call_id})"


def is_current(alias: str) -> str:
    """SQL condition: the outcomes row `alias` is its call's current outcome."""
    return f"{alias}.seq = {current_seq(f'{alias}.call_id')}"


def join_current(alias: str = "o", *, final: bool = False) -> str:
    """SQL: LEFT JOIN the planned row `p` to its current outcome as `alias` (NULLs when it has
    none; with `final`, also when the current outcome is not final)."""
    only = f" AND {alias}.status IN {FINAL}" if final else ""
    return f"LEFT JOIN outcomes {alias} ON {alias}.seq = {current_seq('p.call_id')}{only}\n"


def is_done(call_id: str) -> str:
    """SQL condition: the call whose id is the expression `call_id` has a final current
    outcome. (Reading the current row by its seq measured faster than comparing the newest
    final seq with the newest seq on the index alone: bench/ledger_scale.py's ledger.)"""
    seq = current_seq(call_id)
    return f"EXISTS (SELECT 1 FROM outcomes fin WHERE fin.seq = {seq} AND fin.status IN {FINAL})"


CURRENT_OUTCOME = join_current("o")
"""Joins each planned row `p` to its current outcome `o`."""
