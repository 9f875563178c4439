"""What leaving superseded chains out of every read costs (`--replace-model`,
ledger/current.py `PLANNED`): `tally status`'s counts over a ledger of N one-step calls, all
answered, with no supersession and with a quarter of the chains superseded, against the same
query over the bare planned table. Ratios in one run, best of --reps.

The ledger is built with the real schema (migrations) but rows inserted directly with dummy
hashes: the hash chain plays no part in these reads, and building through the writer would
take most of the run.

Usage: .venv/bin/python bench/supersede_cost.py [--calls 300000] [--reps 5]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

import orjson

from evaltally.ledger.current import CURRENT_OUTCOME, PLANNED, SUPERSEDED_KEY
from evaltally.ledger.schema import MIGRATIONS, MIGRATIONS_TABLE


def build(path: Path, calls: int) -> sqlite3.Connection:
    db = sqlite3.connect(path)
    db.execute(MIGRATIONS_TABLE)
    for migration in MIGRATIONS:
        for stmt in migration.statements:
            db.execute(stmt)
    db.executemany(
        "INSERT INTO planned VALUES (?, 1, ?, ?, 0, ?, 'b', '', ?, 0, '{}', 'h')",
        ((i + 1, f"c{i:09d}", f"ch{i:09d}", f"m{i % 4}", f"q{i}") for i in range(calls)),
    )
    db.executemany(
        "INSERT INTO outcomes (seq, ev, session, call_id, status, parsed_json, attempts, at,"
        " row_hash) VALUES (?, ?, 1, ?, 'ok', 'null', 1, 0, 'h')",
        ((i + 1, i + 1, f"c{i:09d}") for i in range(calls)),
    )
    config = orjson.dumps({"text": "x" * 3000}).decode()
    db.executemany(  # a long run's meta: a config entry per session
        "INSERT INTO meta VALUES (?, 1, 'config', ?, 0, 'h')", ((i, config) for i in range(1, 301))
    )
    db.commit()
    return db


def best(db: sqlite3.Connection, queries: tuple[str, str], reps: int) -> tuple[float, float]:
    """The best time of each query, the two taken in turn (a shared machine's load falls on
    both alike)."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(reps):
        for query, took in zip(queries, times, strict=True):
            start = time.perf_counter()
            db.execute(query).fetchall()
            took.append(time.perf_counter() - start)
    return min(times[0]), min(times[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    counts = "SELECT p.model, coalesce(o.status, 'unfinished'), count(*) FROM {} p {} GROUP BY 1, 2"
    bare = counts.format("planned", CURRENT_OUTCOME)
    live = counts.format(PLANNED, CURRENT_OUTCOME)
    with tempfile.TemporaryDirectory() as tmp:
        db = build(Path(tmp) / "ledger.sqlite", args.calls)
        base, none = best(db, (bare, live), args.reps)
        chains = [f"ch{i:09d}" for i in range(0, args.calls, 4)]
        for i in range(0, len(chains), 5000):
            value = orjson.dumps({"model": "m0", "chains": chains[i : i + 5000]}).decode()
            db.execute(
                "INSERT INTO meta VALUES (?, 1, ?, ?, 0, 'h')", (1000 + i, SUPERSEDED_KEY, value)
            )
        db.commit()
        base_after, quarter = best(db, (bare, live), args.reps)
        db.close()
    print(f"status counts over {args.calls:,} calls: bare planned {base:.3f} s")
    print(f"  no supersession:           {none:.3f} s  ratio {none / base:.2f}")
    print(
        f"  {len(chains):,} chains superseded: {quarter:.3f} s  ratio {quarter / base_after:.2f}"
        f" (bare {base_after:.3f} s)"
    )


if __name__ == "__main__":
    main()
