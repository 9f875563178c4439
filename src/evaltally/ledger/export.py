"""`tally export`: one JSONL row per planned call, in a documented, versioned schema
(docs/export.md). Streams row by row (constant memory at 1M rows) and writes to a temporary
file renamed into place, so a failed export never leaves a half-written file under `out`.

The rename replaces whatever `out` names, so the target is checked first: a run directory's own
files (its ledger, WAL, config copy, lock) are refused outright, any other existing file
unless `force`."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any

import orjson

from evaltally.errors import LedgerError
from evaltally.ledger.current import CURRENT_OUTCOME, PLANNED
from evaltally.ledger.export_record import EXPORT_SCHEMA_VERSION, FIELDS, USAGE_KEYS, ExportRow
from evaltally.ledger.files import LEDGER_FILE, RUN_OWNED, connect_ro, ledger_path, translate
from evaltally.ledger.lock import LOCK_FILE

_SELECT = (
    """
SELECT p.call_id, p.chain_id, p.step, p.model, p.benchmark, p.protocol, p.item_id, p.sample,
       p.spec_json, o.status,
       (SELECT count(*) FROM attempts a WHERE a.call_id = p.call_id AND a.kind = 'start'),
       o.raw_text, o.parsed_json, o.parse_path,
       o.input_tokens, o.output_tokens, o.reasoning_tokens, o.cached_tokens,
       o.latency_ms, o.request_hash, o.reason
FROM {planned} p
"""
    + CURRENT_OUTCOME
)
# The export holds the calls that count; a superseded call is still shown by `tally view`.
_QUERY = (
    _SELECT.format(planned=PLANNED)
    + "ORDER BY p.model, p.benchmark, p.protocol, p.chain_id, p.step"
)
_ONE = _SELECT.format(planned="planned") + "WHERE p.call_id = ?"


def export_rows(
    run_dir: Path, *, enrich: Callable[[ExportRow], Mapping[str, Any]] | None = None
) -> Generator[ExportRow, None, None]:
    """The export rows of `run_dir`, one per planned call, read-only (a live run is fine).
    `tally export` writes them; a run built on another run's answers (SCAE's cte-judge) reads
    them without a file in between."""
    path = ledger_path(Path(run_dir))
    conn = connect_ro(path)
    try:
        for row in conn.execute(_QUERY):
            record = _record(row)
            if enrich is not None:
                extra = enrich(record)
                clash = sorted(set(extra) & set(record))
                if clash:
                    raise LedgerError(
                        f"export enrichment tried to overwrite ledger field(s) {clash} for "
                        f"call {record['call_id']}; rename the benchmark's fields"
                    )
                record.update(extra)
            yield record
    except sqlite3.Error as exc:
        raise translate(exc, path, "export the run") from exc
    finally:
        conn.close()


def export_run(
    run_dir: Path,
    out: Path,
    *,
    enrich: Callable[[ExportRow], Mapping[str, Any]] | None = None,
    force: bool = False,
) -> int:
    """Write the export of `run_dir` to `out`; returns the number of rows. `force` replaces an
    existing file that is not a run's own."""
    out = Path(out)
    check_target(out, Path(run_dir), force=force)
    rows = export_rows(run_dir, enrich=enrich)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    n = 0
    try:
        with tmp.open("wb") as fh:
            for record in rows:
                fh.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
                n += 1
        tmp.replace(out)
    except TypeError as exc:  # orjson: an enrichment returned something that is not JSON
        raise LedgerError(f"export row {n + 1} cannot be written as JSON: {exc}") from exc
    except OSError as exc:
        raise LedgerError(f"cannot write the export to {out}: {exc.strerror or exc}") from exc
    finally:
        rows.close()
        with contextlib.suppress(OSError):
            tmp.unlink()
    return n


def call_record(conn: sqlite3.Connection, call_id: str) -> ExportRow | None:
    """The export row of one planned call, without benchmark fields (`tally view` shows it)."""
    row = conn.execute(_ONE, (call_id,)).fetchone()
    return None if row is None else _record(row)


def check_target(out: Path, run_dir: Path, *, force: bool) -> None:
    """Refuse to write over a run's own files (any run, through any link) or, without
    `force`, over any existing file."""
    target = out.resolve()
    parent = target.parent
    is_run_dir = (parent / LEDGER_FILE).exists() or (parent / LOCK_FILE).exists()
    owned = is_run_dir and target.name in RUN_OWNED
    if not owned and out.exists():
        owned = any(_same_file(out, run_dir / name) for name in RUN_OWNED)
    if owned:
        raise LedgerError(
            f"refusing to write the export to {out}: it is a file the run in {parent} owns "
            "(ledger, write-ahead log, config copy or lock), and replacing it would destroy "
            f"the run; choose a path outside those files, e.g. {run_dir / 'export.jsonl'}"
        )
    if target.is_dir():
        raise LedgerError(f"cannot write the export to {out}: it is a directory; name a file")
    if out.exists() and not force:
        raise LedgerError(
            f"{out} already exists; pass --force to replace it, or choose another path"
        )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _record(row: tuple[Any, ...]) -> ExportRow:
    """A `_SELECT` row as the export row: the columns come in `FIELDS` order, the JSON ones
    parsed and the four token counts joined into `usage`."""
    spec, status, attempts, raw, parsed, parse_path = row[8:14]
    tokens = row[14:18]
    # A provider that sent no token counts leaves them null; usage is null only without any.
    usage = None if tokens == (None,) * 4 else dict(zip(USAGE_KEYS, tokens, strict=True))
    values = (
        EXPORT_SCHEMA_VERSION,
        *row[:8],
        orjson.loads(spec),
        status if status is not None else "unfinished",
        attempts,
        raw,
        orjson.loads(parsed) if parsed is not None else None,
        parse_path,
        usage,
        *row[18:],
    )
    return dict(zip(FIELDS, values, strict=True))
