"""The calls table: planned calls with their current outcome, filtered, in keyset pages.

A page is "the next N matching rows after key K" (never OFFSET, which re-reads every row before
it), so page 1,000 costs what page 1 costs. Two walks, chosen by the filter:

- plan order (key: `planned.seq`), walking the plan and looking up each call's outcome: fast
  whenever matches are not rare among planned calls; with an item filter it reads the plan once;
- answer order (key: the outcome's `seq`), for a text search without an item filter: walking
  the outcomes alone and matching their text is several times cheaper per row than the plan
  walk, which decides the time when the text is rare (bench/view_scale.py measures both).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import orjson

from evaltally.errors import EvaltallyError
from evaltally.ledger.current import CURRENT_OUTCOME, PLANNED, is_current

STATUSES = ("ok", "parse_error", "failed", "blocked", "unfinished")
PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
ANSWER_PREVIEW = 160


class FilterError(EvaltallyError):
    """A calls-table query the page cannot run (an unknown status, a bad page key)."""


@dataclass(frozen=True)
class CallFilter:
    model: str | None = None
    benchmark: str | None = None
    protocol: str | None = None
    item: str | None = None
    status: str | None = None
    text: str | None = None
    """Substring of the answer text (case-insensitive for ASCII)."""
    recent: bool = False
    """Most recent first: answered calls, newest outcome first (the answer-order walk,
    backwards)."""

    @classmethod
    def from_query(cls, query: dict[str, str]) -> CallFilter:
        def get(key: str) -> str | None:
            value = query.get(key, "").strip()
            return value or None

        status = get("status")
        if status is not None and status not in STATUSES:
            raise FilterError(f"unknown status {status!r}; valid: {', '.join(STATUSES)}")
        order = get("order")
        if order not in (None, "plan", "recent"):
            raise FilterError(f"unknown order {order!r}; valid: plan, recent")
        return cls(
            get("model"),
            get("benchmark"),
            get("protocol"),
            get("item"),
            status,
            get("q"),
            order == "recent",
        )

    def where(self) -> tuple[list[str], list[Any]]:
        conds: list[str] = []
        args: list[Any] = []
        for column, value in (
            ("p.model", self.model),
            ("p.benchmark", self.benchmark),
            ("p.protocol", self.protocol),
            ("p.item_id", self.item),
        ):
            if value is not None:
                conds.append(f"{column} = ?")
                args.append(value)
        if self.status == "unfinished":
            conds.append("o.status IS NULL")
        elif self.status is not None:
            conds.append("o.status = ?")
            args.append(self.status)
        if self.text is not None:
            conds.append("o.raw_text LIKE ? ESCAPE '\\'")
            args.append("%" + _escape_like(self.text) + "%")
        return conds, args


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_COLUMNS = (
    "p.seq, p.call_id, p.chain_id, p.step, p.model, p.benchmark, p.protocol, p.item_id,"
    f" p.sample, o.status, o.attempts, o.latency_ms, substr(o.raw_text, 1, {ANSWER_PREVIEW}),"
    " length(o.raw_text), o.reason, p.spec_json"
)
_KEYS = (
    "key", "seq", "call_id", "chain_id", "step", "model", "benchmark", "protocol", "item_id",
    "sample", "status", "attempts", "latency_ms", "answer", "answer_length", "reason", "spec",
)  # fmt: skip
_BY_PLAN = f"SELECT p.seq, {_COLUMNS} FROM {PLANNED} p {CURRENT_OUTCOME}"
_BY_ANSWER = (
    f"SELECT o.seq, {_COLUMNS} FROM outcomes o JOIN {PLANNED} p ON p.call_id = o.call_id"
    f" WHERE {is_current('o')}"
)


def list_calls(
    conn: sqlite3.Connection,
    flt: CallFilter,
    *,
    after: int | None = None,
    before: int | None = None,
    limit: int = PAGE_SIZE,
) -> dict[str, Any]:
    """One page of matching calls. `after`/`before` are the `key` of the last / first row of
    the neighbouring page; the result names the keys of the pages around it."""
    if after is not None and before is not None:
        raise FilterError("give `after` or `before`, not both")
    limit = max(1, min(limit, MAX_PAGE_SIZE))
    conds, args = flt.where()
    by_answer = flt.recent or (flt.text is not None and flt.item is None)
    key = "o.seq" if by_answer else "p.seq"
    backwards = before is not None
    # Newest first walks the answer order the other way: "after" a row means older than it.
    older, newer = ("<", ">") if flt.recent else (">", "<")
    if after is not None:
        conds.append(f"{key} {older} ?")
        args.append(after)
    if before is not None:
        conds.append(f"{key} {newer} ?")
        args.append(before)
    where = " AND ".join(conds)
    if by_answer:
        sql = f"{_BY_ANSWER} AND {where}" if where else _BY_ANSWER
    else:
        sql = f"{_BY_PLAN} WHERE {where}" if where else _BY_PLAN
    descending = backwards != flt.recent
    sql += f" ORDER BY {key} {'DESC' if descending else 'ASC'} LIMIT ?"
    rows = conn.execute(sql, (*args, limit + 1)).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    if backwards:
        rows.reverse()
    calls = [dict(zip(_KEYS, r, strict=True)) for r in rows]
    for call in calls:
        call["status"] = call["status"] or "unfinished"
        call["spec"] = orjson.loads(call["spec"])
    first, last = (calls[0]["key"], calls[-1]["key"]) if calls else (None, None)
    # Going forward, a previous page exists whenever we started after some row (and the other
    # way round); `more` tells whether the far side has rows.
    has_next = more if not backwards else before is not None
    has_prev = (after is not None) if not backwards else more
    return {
        "calls": calls,
        "next": last if has_next and calls else None,
        "prev": first if has_prev and calls else None,
    }


def raw_texts(conn: sqlite3.Connection, call_ids: list[str]) -> dict[str, str]:
    """call id -> the whole raw answer of its current outcome (the page shows a preview; a
    score needs all of it)."""
    if not call_ids:
        return {}
    marks = ",".join("?" * len(call_ids))
    rows = conn.execute(
        f"SELECT p.call_id, o.raw_text FROM planned p {CURRENT_OUTCOME}"
        f" WHERE p.call_id IN ({marks}) AND o.raw_text IS NOT NULL",
        call_ids,
    ).fetchall()
    return dict(rows)
