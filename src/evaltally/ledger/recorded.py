"""One chain of a run as it was recorded, read without writing: what a fork reuses.

The run's ledger is opened read-only (`mode=ro`, ledger/files.py), so reading a parent run
never changes it and works while the parent is live. The chain comes back in the shape resume
uses (`PendingChain`: every planned call in step order, the recorded final answers by step,
each with its request hash and its outcome's row).
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from evaltally.errors import LedgerError
from evaltally.ledger.files import connect_ro, ledger_path, translate
from evaltally.ledger.pending import CHAIN_SELECT, build_chain
from evaltally.ledger.results import PendingChain

MIN_PREFIX = 6
_HEX = re.compile(r"[0-9a-f]+")


def resolve_chain(run_dir: Path, ref: str) -> str:
    """The full id of the chain `ref` names: a whole chain id or a unique prefix of at least
    MIN_PREFIX hex characters (as `tally export` prints them)."""
    ref = ref.strip().lower()
    if len(ref) < MIN_PREFIX or not _HEX.fullmatch(ref):
        raise LedgerError(
            f"--chain {ref!r}: give a chain id (the export's chain_id) or at least its first "
            f"{MIN_PREFIX} hex characters"
        )
    # A range on the (chain_id, step) index: every id starting with ref, 'g' sorting after
    # every hex digit.
    found = _query(
        run_dir,
        "look up the chain",
        "SELECT DISTINCT chain_id FROM planned WHERE chain_id >= ? AND chain_id < ? LIMIT 2",
        (ref, ref + "g"),
    )
    if not found:
        raise LedgerError(f"{run_dir}: no chain id starts with {ref!r} (see `tally export`)")
    if len(found) > 1:
        raise LedgerError(f"{run_dir}: several chain ids start with {ref!r}; give more of it")
    return str(found[0][0])


def read_chain(run_dir: Path, chain_id: str) -> PendingChain:
    """Every planned call of the chain, in step order, with its recorded final answers."""
    sql = CHAIN_SELECT + "WHERE p.chain_id = ? ORDER BY p.step, f.seq"
    rows = _query(run_dir, "read the chain", sql, (chain_id,))
    if not rows:
        raise LedgerError(f"{run_dir}: no chain {chain_id}")
    # A second final outcome of one call (verify reports it): the first one counts, as in resume.
    first = [r for i, r in enumerate(rows) if i == 0 or r[0] != rows[i - 1][0]]
    return build_chain(first, {})


def _query(run_dir: Path, doing: str, sql: str, params: tuple[str, ...]) -> list[tuple[Any, ...]]:
    path = ledger_path(Path(run_dir))
    conn = connect_ro(path)
    try:
        return [tuple(r) for r in conn.execute(sql, params).fetchall()]
    except sqlite3.Error as exc:
        raise translate(exc, path, doing) from exc
    finally:
        conn.close()
