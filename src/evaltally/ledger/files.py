"""Run-directory files: paths, the pre-open sanity check, the run lock, read-only connections.

Everything that can meet an OSError or sqlite3.Error here translates it into LedgerError naming
the file and what to do, so callers only ever catch evaltally errors.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import sqlite3
from pathlib import Path

from evaltally.errors import LedgerError, RunLockedError

LEDGER_FILE = "ledger.sqlite"
LOCK_FILE = ".lock"
_MAGIC = b"SQLite format 3\x00"


def ledger_path(run_dir: Path) -> Path:
    return run_dir / LEDGER_FILE


def iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="seconds")


def check_file(path: Path) -> None:
    """Refuse a file that is not an SQLite database or is visibly truncated, before SQLite
    opens it for writing (opening in WAL mode could otherwise write to a file we should leave
    exactly as it is)."""
    try:
        size = path.stat().st_size
        if size == 0:
            return  # an empty file is an empty database (a run killed while being created)
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
    wal = path.with_name(path.name + "-wal")
    has_wal = wal.exists() and wal.stat().st_size > 0
    if change_counter == valid_for and pages * page_size > size and not has_wal:
        raise LedgerError(
            f"{path} is truncated ({size} bytes, the header says {pages * page_size}); it was "
            "left untouched. Restore it from a copy; `tally verify` explains what is readable."
        )


def connect_ro(path: Path, *, any_thread: bool = False) -> sqlite3.Connection:
    """A read-only connection for status/export/verify: never writes, works while a run is live.
    `any_thread`: used by one thread at a time, but not always the same one (asyncio.to_thread)."""
    if not path.exists():
        raise LedgerError(f"{path} does not exist; start a run with `tally run <config>`")
    check_file(path)
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=not any_thread)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as exc:
        raise translate(exc, path, "open the ledger read-only") from exc
    if "migrations" not in names or "planned" not in names:
        conn.close()
        raise LedgerError(
            f"{path} is an SQLite database but not an evaltally ledger; "
            "point the command at a run directory created by `tally run`"
        )
    return conn


def translate(exc: BaseException, path: Path, doing: str) -> LedgerError:
    """One wording for every database or file error the ledger meets."""
    text = str(exc) or type(exc).__name__
    if "not a database" in text or "malformed" in text:
        hint = "the file is damaged; restore it from a copy and run `tally verify`"
    elif "readonly" in text or "permission" in text.lower():
        hint = "check the permissions of the run directory"
    elif "disk" in text or "full" in text:
        hint = "free disk space, then `tally resume` continues where the run stopped"
    else:
        hint = "nothing recorded before this point is lost; `tally verify` checks the ledger"
    return LedgerError(f"{path}: could not {doing}: {text} ({hint})")


class RunLock:
    """An exclusive flock on run_dir/.lock. The OS releases it when the process dies, so a
    kill -9 never leaves a stale lock; the file's contents only serve the error message."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self, command: str, started_at: float) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise LedgerError(f"{self.path}: cannot create the run lock ({exc.strerror})") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise RunLockedError(
                f"run {self.path.parent} is already being driven by another process "
                f"({holder}); wait for it or stop it"
            ) from None
        except OSError as exc:
            os.close(fd)
            raise LedgerError(f"{self.path}: cannot lock the run ({exc.strerror})") from exc
        info = {"pid": os.getpid(), "command": command, "started_at": iso(started_at)}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return (
            f"pid {info.get('pid', '?')}, started {info.get('started_at', '?')}, "
            f"command {info.get('command', '?')!r}"
        )
    except (OSError, ValueError):
        return "pid unknown"


def lock_holder(run_dir: Path) -> str | None:
    """Who holds the run's lock right now (None if nobody). Never creates the lock file."""
    path = run_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_holder(fd)
    finally:
        os.close(fd)  # closing drops our probe lock if we got it
    return None
