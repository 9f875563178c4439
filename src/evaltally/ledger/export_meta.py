"""The export's run metadata: one JSON object beside every export `tally export` writes
(`FILE.meta.json` next to `FILE`), about the run as a whole rather than one call: the limits each
lane adopted from the provider's headers, and every replacement of a model's calls
(docs/export.md, "Run metadata")."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import orjson

from evaltally.errors import LedgerError
from evaltally.ledger.files import connect_ro, ledger_path, translate
from evaltally.ledger.lock import iso
from evaltally.ledger.status import LANE_RATE_PREFIX
from evaltally.ledger.supersede import supersessions

META_SCHEMA_VERSION = 1
META_SUFFIX = ".meta.json"


def meta_path(out: Path) -> Path:
    """Where the run metadata of the export `out` goes."""
    return out.with_name(out.name + META_SUFFIX)


def run_metadata(run_dir: Path, export: Path, rows: int) -> dict[str, Any]:
    path = ledger_path(Path(run_dir))
    conn = connect_ro(path)
    try:
        lanes = _lanes(conn)
        replaced = [s.as_dict() for s in supersessions(conn)]
    except sqlite3.Error as exc:
        raise translate(exc, path, "read the run's metadata") from exc
    finally:
        conn.close()
    for entry in replaced:
        entry["at"] = iso(entry["at"])
    return {
        "schema_version": META_SCHEMA_VERSION,
        "run": Path(run_dir).name,
        "export": export.name,
        "rows": rows,
        "exported_at": iso(time.time()),
        "lanes": lanes,
        "superseded": replaced,
    }


def _lanes(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Per lane, from the newest `lane_rate:` entry of each: the pace it settled on and each
    limit the provider advertised (value, window, the header it came from, when it was seen;
    an entry written before headers were named has none, and is dated by the entry)."""
    lanes: dict[str, dict[str, Any]] = {}
    for key, value, at in conn.execute(
        "SELECT key, value_json, at FROM meta WHERE key LIKE ? ORDER BY seq",
        (LANE_RATE_PREFIX + "%",),
    ):
        learned = orjson.loads(value)
        headers = learned.get("advertised_headers") or {}
        seen = learned.get("advertised_at") or at
        limits = [
            {
                "limit": what,
                "value": limit,
                "window_s": window,
                "header": headers.get(what),
                "seen_at": iso(seen),
            }
            for what, (limit, window) in (learned.get("advertised") or {}).items()
        ]
        paced = {k: learned[k] for k in ("rpm", "tpm") if k in learned}
        lanes[key.removeprefix(LANE_RATE_PREFIX)] = {"paced_per_minute": paced, "adopted": limits}
    return lanes


def write_run_metadata(run_dir: Path, out: Path, rows: int) -> Path:
    """Write the run metadata of the export `out` (through a temporary file renamed into
    place); the caller has checked the target."""
    target = meta_path(out)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    data = orjson.dumps(run_metadata(run_dir, out, rows), option=orjson.OPT_INDENT_2)
    try:
        tmp.write_bytes(data + b"\n")
        tmp.replace(target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise LedgerError(f"cannot write {target}: {exc.strerror or exc}") from exc
    return target
