"""Helpers for the ledger-integrity hostile tests: real filesystems that run out of space or
cannot be written, ledger rows appended the way someone holding sqlite3 and docs/ledger.md can
append them, and `tally` as a real subprocess.

Small disks are real: a tmpfs mounted for the test when the machine allows mounting (root with
CAP_SYS_ADMIN). Elsewhere the kernel's per-process file-size limit (RLIMIT_FSIZE) refuses the
writes instead (EFBIG, which SQLite reports as an I/O error rather than SQLITE_FULL).
Read-only storage is a tmpfs remounted read-only, or else read-only permissions. Setting
TALLY_TEST_NO_MOUNT=1 forces both fallbacks, to check them on a machine that can mount.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from evaltally.ledger.chain import row_hash
from evaltally.ledger.schema import BLOB_POSITIONS, HASHED_COLUMNS, insert_sql
from testkit import FAKE_KEY, write_config, write_items

RUN_TIMEOUT_S = 90.0


def prompts_sweep(
    where: Path, base_url: str, items: int, *, runs_dir: Path | None = None, **kw: Any
) -> Path:
    """A `prompts` sweep of `items` single calls against base_url; its config path."""
    where.mkdir(parents=True, exist_ok=True)
    write_items(where / "items.jsonl", items)
    config = write_config(where, base_url, **kw)
    if runs_dir is not None:
        text = config.read_text().replace('runs_dir = "runs"', f'runs_dir = "{runs_dir}"')
        config.write_text(text)
    return config


def offline_cte_sweep(where: Path, *, name: str = "t", budget: str = "") -> Path:
    """A CTE-Bench sweep of one scenario (120 calls) answered by an offline baseline: no
    network, seconds to run. Its config path; the run goes to where/runs/<name>."""
    where.mkdir(parents=True, exist_ok=True)
    config = where / f"{name}.toml"
    config.write_text(
        f'[run]\nname = "{name}"\nruns_dir = "runs"\n{budget}\n'
        '[[models]]\nkey = "replay"\nprovider = "baseline"\nmodel = "replay"\n\n'
        '[[benchmarks]]\nkind = "cte"\ndata = "builtin"\nlimit = 1\n'
    )
    return config


def set_mock(base_url: str, **knobs: Any) -> None:
    """Change a running mock provider's knobs (POST /control)."""
    data = json.dumps(knobs).encode()
    request = urllib.request.Request(base_url + "/control", data=data, method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        response.read()


def tally_proc(
    *args: str, prefix: tuple[str, ...] = (), env: dict[str, str] | None = None, **popen: Any
) -> subprocess.Popen[str]:
    """Start `tally ARGS` (optionally under a wrapper such as setpriv) without waiting."""
    return subprocess.Popen(
        [*prefix, sys.executable, "-m", "evaltally", *args],
        env={**os.environ, "EVALTALLY_TEST_KEY": FAKE_KEY, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def finish(proc: subprocess.Popen[str], timeout: float = RUN_TIMEOUT_S) -> tuple[int, str, str]:
    """Wait for a process that must end by itself; a hang fails the test (and is killed)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"tally did not exit within {timeout} s; stderr:\n{err}") from None
    return proc.returncode, out, err


def interrupt_run(
    *args: str,
    until: Callable[[], bool],
    what: str,
    act: Callable[[subprocess.Popen[str]], None],
    timeout: float = 60.0,
) -> tuple[int, str, str]:
    """Start `tally ARGS`, wait until `until()` holds, `act` on the process (send it a signal,
    fill its disk), then wait for it to end by itself."""
    proc = tally_proc(*args)
    try:
        wait_for(until, what)
        act(proc)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return finish(proc, timeout)


def run_tally(*args: str, prefix: tuple[str, ...] = (), **kw: Any) -> tuple[int, str, str]:
    return finish(tally_proc(*args, prefix=prefix, **kw))


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def count_rows(db: Path, sql: str) -> int:
    """A read-only count from a ledger that may be live (0 while it is not readable yet)."""
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return int(conn.execute(sql).fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- rows appended with a correct hash chain --------------------------------------------------


def append_row(conn: sqlite3.Connection, table: str, **values: Any) -> int:
    """Append one row to a ledger table exactly as the writer chains it: the next seq (and
    event number), the newest session, row_hash over the previous row's hash and the values.
    Returns its seq. This is what a forger (or an older release) can write without a trace in
    the hash chain."""
    cols = HASHED_COLUMNS[table]
    seq, prev = conn.execute(
        f"SELECT coalesce(max(seq), 0), (SELECT row_hash FROM {table} ORDER BY seq DESC LIMIT 1)"
        f" FROM {table}"
    ).fetchone()
    row: dict[str, Any] = {"seq": seq + 1, **values}
    row.setdefault(
        "session", conn.execute("SELECT coalesce(max(session), 0) FROM sessions").fetchone()[0]
    )
    if "ev" in cols:
        row["ev"] = (
            1
            + conn.execute(
                "SELECT max((SELECT coalesce(max(ev), 0) FROM attempts),"
                " (SELECT coalesce(max(ev), 0) FROM outcomes))"
            ).fetchone()[0]
        )
    ordered = tuple(row.get(c) for c in cols)
    digest = row_hash(prev or "", ordered, BLOB_POSITIONS[table])
    conn.execute(insert_sql(table), (*ordered, digest))
    return int(row["seq"])


def append_attempt(
    conn: sqlite3.Connection,
    call_id: str,
    *,
    response: bytes,
    usage: tuple[int, int, int, int] = (0, 0, 0, 0),
) -> str:
    """A whole successful attempt (start and end rows); returns its request hash."""
    request = b'{"messages": [{"role": "user", "content": "appended"}]}'
    rhash = hashlib.sha256(request).hexdigest()
    attempt = (
        1
        + conn.execute(
            "SELECT coalesce(max(attempt), 0) FROM attempts WHERE call_id = ?", (call_id,)
        ).fetchone()[0]
    )
    now = time.time()
    common = {"call_id": call_id, "attempt": attempt, "at": now}
    append_row(
        conn,
        "attempts",
        kind="start",
        request_hash=rhash,
        request_body=zlib.compress(request),
        **common,
    )
    tin, tout, treason, tcached = usage
    append_row(
        conn,
        "attempts",
        kind="end",
        http_status=200,
        response_body=zlib.compress(response),
        input_tokens=tin,
        output_tokens=tout,
        reasoning_tokens=treason,
        cached_tokens=tcached,
        latency_ms=1.0,
        **common,
    )
    return rhash


def append_ok(
    conn: sqlite3.Connection,
    call_id: str,
    text: str,
    *,
    request_hash: str | None = None,
    usage: tuple[int, int, int, int] = (0, 0, 0, 0),
) -> int:
    tin, tout, treason, tcached = usage
    return append_row(
        conn,
        "outcomes",
        call_id=call_id,
        status="ok",
        raw_text=text,
        parsed_json=text,
        parse_path="json",
        request_hash=request_hash,
        attempts=1,
        input_tokens=tin,
        output_tokens=tout,
        reasoning_tokens=treason,
        cached_tokens=tcached,
        latency_ms=1.0,
        at=time.time(),
    )


# -- real storage: small disks and read-only storage -----------------------------------------


@cache
def can_mount() -> bool:
    """Whether this process may mount a tmpfs (checked once, by doing it)."""
    if os.environ.get("TALLY_TEST_NO_MOUNT") == "1" or os.geteuid() != 0:
        return False
    probe = Path(tempfile.mkdtemp(prefix="tally-mount-probe-"))
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            return False
        subprocess.run(["umount", str(probe)], check=True)
        return True
    except OSError:
        return False
    finally:
        probe.rmdir()


def _mount(point: Path, size: str) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], check=True)


def _umount(point: Path) -> None:
    subprocess.run(["umount", "-l", str(point)], check=False)


class SmallDisk:
    """Storage for run directories that can be made to run out of space on demand."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmpfs = can_mount()
        self._filler = root / "filler.bin"
        self._limit: int | None = None
        if self.tmpfs:
            _mount(root, "32m")

    @property
    def full_phrase(self) -> str:
        """How `tally` names the cause: ENOSPC on a tmpfs, EFBIG under the rlimit."""
        return "the disk is full" if self.tmpfs else "write error"

    def leave_free(self, nbytes: int) -> None:
        """Before a process starts: fill the disk so that about nbytes remain (tmpfs), or
        limit the next process's files to nbytes (rlimit)."""
        if self.tmpfs:
            self._fill()
            size = self._filler.stat().st_size
            os.truncate(self._filler, max(0, size - nbytes))
        else:
            self._limit = nbytes

    def fill_now(self, pid: int) -> None:
        """While process `pid` runs: take away every free byte (or every write past 4 KiB)."""
        if self.tmpfs:
            self._fill()
        else:
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (4096, 4096))

    def free(self) -> None:
        self._limit = None
        with contextlib.suppress(FileNotFoundError):
            self._filler.unlink()

    def popen_options(self) -> dict[str, Any]:
        limit = self._limit
        if limit is None:
            return {}

        def apply() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        return {"preexec_fn": apply}

    def close(self) -> None:
        if self.tmpfs:
            _umount(self.root)

    def _fill(self) -> None:
        chunk = b"\0" * (1 << 16)
        # Unbuffered: each write takes what still fits, the next one fails with ENOSPC.
        with self._filler.open("ab", buffering=0) as fh, contextlib.suppress(OSError):
            while True:
                fh.write(chunk)


@contextlib.contextmanager
def small_disk(root: Path) -> Iterator[SmallDisk]:
    root.mkdir(parents=True, exist_ok=True)
    disk = SmallDisk(root)
    try:
        yield disk
    finally:
        disk.close()


@contextlib.contextmanager
def read_only_copy(run_dir: Path, scratch: Path) -> Iterator[tuple[Path, tuple[str, ...]]]:
    """A copy of run_dir on storage `tally` cannot write, and the command prefix to run it
    under: a tmpfs remounted read-only where mounting is allowed; else read-only permissions,
    which root obeys only without CAP_DAC_OVERRIDE (dropped with setpriv)."""
    scratch.mkdir(parents=True, exist_ok=True)
    if can_mount():
        _mount(scratch, "64m")
        try:
            copy = Path(shutil.copytree(run_dir, scratch / run_dir.name))
            subprocess.run(["mount", "-o", "remount,ro", str(scratch)], check=True)
            yield copy, ()
        finally:
            _umount(scratch)
        return
    copy = Path(shutil.copytree(run_dir, scratch / run_dir.name))
    for path in (copy, *copy.iterdir()):
        path.chmod(0o555 if path.is_dir() else 0o444)
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        caps = "-dac_override,-dac_read_search,-fowner"
        prefix = ("setpriv", f"--bounding-set={caps}", "--inh-caps=-all", "--")
    try:
        yield copy, prefix
    finally:
        copy.chmod(0o755)
