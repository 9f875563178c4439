"""The current outcome of a planned call, and which planned calls are current at all: the one
definition every read uses (status, export, resume's pending work, verification, the view, late
steps).

A planned call stays in `planned` forever, but a model's calls can be superseded: the config
changed that model and the run was continued with `--replace-model` (ledger/supersede.py). The
chains that held them are listed in `superseded` meta entries; `PLANNED` is the planned calls
outside them, the run's denominator from then on.

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

SUPERSEDED_KEY = "superseded"
"""Meta key of a supersession entry: {"model", "chains": [chain ids], "calls", "changes",
"command"}; a large one is split over several entries of the same session and model."""

SUPERSEDED_CHAINS = (
    "(SELECT sup.value FROM meta sup_m, json_each(sup_m.value_json, '$.chains') sup"
    f" WHERE sup_m.key = '{SUPERSEDED_KEY}')"
)
"""SQL: the ids of every superseded chain (read once per statement: SQLite keeps an
uncorrelated IN list as a temporary index; a meta table exists in every ledger version, so
ledgers read without upgrading read the same)."""


def live(alias: str) -> str:
    """SQL condition: the planned row `alias` is not superseded."""
    return f"{alias}.chain_id NOT IN {SUPERSEDED_CHAINS}"


PLANNED = f"(SELECT * FROM planned WHERE {live('planned')})"
"""The planned calls that count: `FROM {PLANNED} p` in place of `FROM planned p` (SQLite
flattens it, so the planned indexes serve the outer query as before)."""

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
