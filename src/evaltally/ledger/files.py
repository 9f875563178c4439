"""Run-directory files: paths, the pre-open sanity check, read-only connections, and the one
wording for every database or file error.

Everything that can meet an OSError or sqlite3.Error here translates it into LedgerError naming
the file and what to do, so callers only ever catch evaltally errors.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

from evaltally.errors import LedgerError, LedgerWriteError
from evaltally.ledger.lock import LOCK_FILE
from evaltally.ledger.schema import LEDGER_TABLES

LEDGER_FILE = "ledger.sqlite"
CONFIG_COPY = "config.toml"
STAGED_COPY = CONFIG_COPY + ".next"
"""The config a session is about to record a changed plan from (config/run_dir.py)."""
CONFIG_DIR_FILE = ".config_dir"
SIDECARS = ("-wal", "-shm", "-journal")
RUN_OWNED = frozenset(
    {
        LEDGER_FILE,
        *(LEDGER_FILE + s for s in SIDECARS),
        CONFIG_COPY,
        STAGED_COPY,
        CONFIG_DIR_FILE,
        LOCK_FILE,
        "config.tmp",
        "lanes.json",  # why each lane of a live session waits (runner/lane_states.py)
        "lanes.json.tmp",
    }
)
"""Files a run directory owns: writing anything else over one of them destroys the run."""

_MAGIC = b"SQLite format 3\x00"
# Primary result codes (sqlite3.Error.sqlite_errorcode & 0xFF).
_SQLITE_READONLY, _SQLITE_FULL, _SQLITE_CANTOPEN = 8, 13, 14


def ledger_path(run_dir: Path) -> Path:
    return run_dir / LEDGER_FILE


def wal_path(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def check_file(path: Path) -> None:
    """Refuse a file that is not an SQLite database or is visibly truncated, before SQLite
    opens it for writing (opening in WAL mode could otherwise write to a file we should leave
    exactly as it is)."""
    try:
        size = path.stat().st_size
        if size == 0:
            return  # an empty database; Ledger.open decides whether that means "lost"
        with path.open("rb") as fh:
            header = fh.read(100)
    except OSError as exc:
        raise LedgerError(
            f"{path}: cannot read the ledger ({exc.strerror}); check the path and its permissions"
        ) from exc
    if len(header) < 100 or not header.startswith(_MAGIC):
        raise LedgerError(
            f"{path} is not an SQLite database (bad header); it was left untouched. "
            "Point the command at a run directory created by `tally run`, or move the file away."
        )
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    change_counter = header[24:28]
    valid_for = header[92:96]
    # The in-header page count is authoritative only when valid_for == change counter (SQLite
    # file format, section 1.3.7); a file shorter than it was cut off (partial copy, full disk).
    # With a non-empty WAL beside it, a checkpoint cut off by a kill can leave the header ahead
    # of the file; SQLite completes it from the WAL on open, so only judge a file without one.
    if change_counter == valid_for and pages * page_size > size and not _size(wal_path(path)):
        raise LedgerError(
            f"{path} is truncated ({size} bytes, the header says {pages * page_size}); it was "
            "left untouched. Restore it from a copy; `tally verify` explains what is readable."
        )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def connect_ro(path: Path, *, any_thread: bool = False) -> sqlite3.Connection:
    """A read-only connection for status/export/verify: never writes, works while a run is live,
    and on read-only storage (see _open_ro). `any_thread`: used by one thread at a time, but not
    always the same one (asyncio.to_thread)."""
    if not path.exists():
        raise LedgerError(f"{path} does not exist; start a run with `tally run <config>`")
    check_file(path)
    conn = _open_ro(path, any_thread)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as exc:
        conn.close()
        raise translate(exc, path, "open the ledger read-only") from exc
    if not names:
        conn.close()
        raise LedgerError(f"{path}: {lost_description(path)}; there is nothing to read")
    if "migrations" not in names or "planned" not in names:
        conn.close()
        raise LedgerError(
            f"{path} is an SQLite database but not an evaltally ledger; "
            "point the command at a run directory created by `tally run`"
        )
    return conn


def _open_ro(path: Path, any_thread: bool = False) -> sqlite3.Connection:
    try:
        return _probe(f"file:{path}?mode=ro", any_thread)
    except sqlite3.Error as exc:
        if _code(exc) not in (_SQLITE_READONLY, _SQLITE_CANTOPEN):
            raise translate(exc, path, "open the ledger read-only") from exc
        cause = exc
    # Read-only storage: a WAL database needs its -shm index, which cannot be created here.
    # A cleanly closed run has folded its WAL into the file, so reading the file as immutable
    # is exact; a WAL with content would be ignored by immutable=1, so refuse rather than
    # show a stale ledger.
    wal = wal_path(path)
    if _size(wal):
        raise LedgerError(
            f"{path}: cannot open the ledger read-only ({cause}): its directory is not writable "
            f"and {wal.name} still holds rows not folded into the file (the run did not end "
            "cleanly); copy the run directory to writable storage and run the command there"
        ) from cause
    try:
        return _probe(f"file:{path}?immutable=1", any_thread)
    except sqlite3.Error as exc:
        raise translate(exc, path, "open the ledger read-only") from exc


def _probe(uri: str, any_thread: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, check_same_thread=not any_thread)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _code(exc: sqlite3.Error) -> int:
    return int(getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF


def ledger_tables(path: Path) -> set[str]:
    """The ledger tables `path` holds (empty when the file is absent, empty or emptied)."""
    if not path.exists() or path.stat().st_size == 0:
        return set()
    check_file(path)
    try:
        # Without WAL content the file alone is the truth: read it immutable, which creates no
        # -wal/-shm files beside a ledger that is being examined as possibly lost.
        conn = _probe(f"file:{path}?immutable=1") if not _size(wal_path(path)) else _open_ro(path)
        try:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise translate(exc, path, "read the ledger") from exc
    return {r[0] for r in rows} & set(LEDGER_TABLES)


def lost_description(path: Path) -> str:
    """What is left of a ledger that holds no tables, in words."""
    if not path.exists():
        return f"{path.name} is missing"
    size = path.stat().st_size
    if size == 0:
        return f"{path.name} is 0 bytes"
    wal = wal_path(path)
    wal_note = (
        f"{wal.name} ({_size(wal):,} bytes) did not restore them"
        if wal.exists()
        else f"there is no {wal.name}: the write-ahead log holding them was lost"
    )
    return f"{path.name} ({size:,} bytes) holds no ledger tables and {wal_note}"


def translate(exc: BaseException, path: Path, doing: str) -> LedgerError:
    """One wording for every database or file error the ledger meets while reading."""
    text = str(exc) or type(exc).__name__
    if "not a database" in text or "malformed" in text:
        hint = "the file is damaged; restore it from a copy and run `tally verify`"
    elif "readonly" in text or "permission" in text.lower():
        hint = "check the permissions of the run directory"
    elif _is_disk_full(exc):
        hint = "free disk space, then run the command again"
    else:
        hint = "nothing recorded before this point is lost; `tally verify` checks the ledger"
    return LedgerError(f"{path}: could not {doing}: {text} ({hint})")


def write_failure(exc: BaseException, path: Path, doing: str) -> LedgerWriteError:
    """One line for a failed ledger commit: the cause, the free space, the next command."""
    run_dir = path.parent
    free = _free_space(run_dir)
    if _is_disk_full(exc):
        cause = f"the disk is full ({free} free on the run's filesystem)"
        fix = "free space"
    else:
        cause = f"write error: {exc or type(exc).__name__} ({free} free)"
        fix = "fix the cause"
    return LedgerWriteError(
        f"{path}: could not {doing}: {cause}; everything committed before is kept; "
        f"{fix}, then `tally resume {run_dir}`"
    )


def _is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.Error):
        return _code(exc) == _SQLITE_FULL
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return "disk is full" in str(exc)


def _free_space(directory: Path) -> str:
    try:
        free = float(shutil.disk_usage(directory).free)
    except OSError:
        return "unknown space"
    units = ("bytes", "KB", "MB", "GB", "TB")
    i = 0
    while free >= 1000 and i < len(units) - 1:
        free /= 1000
        i += 1
    return f"{free:,.0f} bytes" if i == 0 else f"{free:,.1f} {units[i]}"
