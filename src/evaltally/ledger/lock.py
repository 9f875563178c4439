"""The run lock: one process drives a run at a time."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
from pathlib import Path

from evaltally.errors import LedgerError, RunLockedError

LOCK_FILE = ".lock"


def iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="seconds")


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
