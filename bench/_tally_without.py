"""`tally` with named parts of its per-call work switched off, for bench/cost_split.py only.

Usage: python bench/_tally_without.py PARTS TALLY-ARGS...
PARTS is a comma-separated list of the keys of PARTS below, or "-" for none (`tally` as is).

A run made this way is a measurement, not a result: without its attempt and outcome rows the
ledger can neither be resumed nor exported. Each part names what it replaces; a name that no
longer exists stops the script instead of measuring nothing.
"""

from __future__ import annotations

import sqlite3
import sys
from typing import Any

from evaltally.cli import main as tally_main
from evaltally.cli import startup

startup.begin()

from evaltally.ledger import writer  # noqa: E402
from evaltally.ledger.store import Ledger  # noqa: E402 (the collector is paused first, as in `tally`)
from evaltally.ledger.writer import Rows  # noqa: E402
from evaltally.runner.pacing import SlowStart  # noqa: E402

_PER_CALL_TABLES = ("attempts", "outcomes")
_commit = writer.commit_rows


def _record_nothing(*_args: Any, **_kwargs: Any) -> None:
    return None


async def _no_commit_wait(_self: Ledger) -> None:
    return None


def _never_wait(_self: SlowStart, _sent: int, _now: float) -> float:
    return 0.0


def _commit_all_but_per_call(conn: sqlite3.Connection, rows: Rows) -> None:
    _commit(conn, {t: batch for t, batch in rows.items() if t not in _PER_CALL_TABLES})


PARTS: dict[str, list[tuple[Any, str, Any]]] = {
    # The ledger still records the plan, the session and its checkpoints.
    "rows": [
        (Ledger, "attempt_started", _record_nothing),
        (Ledger, "attempt_finished", _record_nothing),
        (Ledger, "outcome", _record_nothing),
    ],
    # The rows are built and hash-chained as shipped, but never reach SQLite.
    "inserts": [(writer, "commit_rows", _commit_all_but_per_call)],
    # Requests leave and answers reach their chain without waiting for their rows' commit.
    "durable": [(Ledger, "committed", _no_commit_wait)],
    # A lane that knows no request limit sends unpaced from its first request.
    "ramp": [(SlowStart, "wait_time", _never_wait)],
}


def main() -> None:
    names = [n for n in sys.argv[1].split(",") if n not in ("", "-")]
    for name in names:
        if name not in PARTS:
            raise SystemExit(f"unknown part {name!r}; known: {', '.join(PARTS)}")
        for owner, attr, replacement in PARTS[name]:
            if not hasattr(owner, attr):
                raise SystemExit(f"{owner.__name__}.{attr} no longer exists: update {__file__}")
            setattr(owner, attr, replacement)
    sys.argv = ["tally", *sys.argv[2:]]
    tally_main()


if __name__ == "__main__":
    main()
