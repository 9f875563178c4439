"""The run directories a `tally view` serves, and read-only access to each.

The page only ever reaches a run through the name it was given here; no request carries a path.
Every database read opens its own `mode=ro` connection and reads to the end at once, so no read
transaction stays open between requests (a live writer's checkpoints are never held back), and
the run lock is never touched: liveness comes from the `sessions` table and the writer's pid.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaltally.errors import EvaltallyError, LedgerError
from evaltally.ledger.files import connect_ro, ledger_path, translate

# The shortest time a whole-ledger aggregate is reused while the ledger keeps changing.
RECOMPUTE_EVERY_S = 2.0

if TYPE_CHECKING:
    from evaltally.benchmarks.base import Benchmark
    from evaltally.config import SweepConfig


@dataclass
class ViewRun:
    name: str
    run_dir: Path
    _loaded: bool = False
    _config: SweepConfig | None = None
    _benchmarks: dict[str, Benchmark] = field(default_factory=dict)
    config_note: str | None = None
    """Why the run's config or benchmarks could not be loaded (spend and oracle fields are then
    not shown); None when they loaded."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _jobs_lock: threading.Lock = field(default_factory=threading.Lock)
    _jobs: dict[str, threading.Thread] = field(default_factory=dict)
    _results: dict[str, tuple[Any, Any, float, float]] = field(default_factory=dict)
    """name -> (ledger version, value or error, finished at, seconds it took)."""

    @property
    def ledger(self) -> Path:
        return ledger_path(self.run_dir)

    @contextmanager
    def read(self, doing: str) -> Iterator[sqlite3.Connection]:
        conn = connect_ro(self.ledger)
        try:
            yield conn
        except sqlite3.Error as exc:
            raise translate(exc, self.ledger, doing) from exc
        finally:
            conn.close()

    def version(self) -> tuple[int, ...]:
        """Changes whenever the writer commits (the WAL or the file grows or is rewritten)."""
        out: list[int] = []
        for path in (self.ledger, self.ledger.with_name(self.ledger.name + "-wal")):
            try:
                st = path.stat()
            except OSError:
                out += [0, 0]
                continue
            out += [st.st_mtime_ns, st.st_size]
        return tuple(out)

    def latest(
        self, name: str, compute: Callable[[], Any], wait_s: float
    ) -> tuple[Any, float | None, bool]:
        """(value, when computed, recomputing) of the last `compute()` under `name`.

        A whole-ledger aggregate takes seconds on a million-call run: it is recomputed in a
        background thread when the ledger changed since, and a request waits at most `wait_s`
        for it, so a small run answers at once and a huge one never holds a request (the page
        shows the last value and asks again). While a sweep writes, the ledger changes all the
        time: a value is kept for RECOMPUTE_EVERY_S or 4x the time it took to compute,
        whichever is longer, so the page never takes more than a fifth of a core from the
        sweep it watches. An error is raised to the caller.
        """
        version = self.version()
        with self._jobs_lock:
            done = self._results.get(name)
            job = self._jobs.get(name)
            fresh = done is not None and (
                done[0] == version or time.time() - done[2] < max(RECOMPUTE_EVERY_S, 4 * done[3])
            )
            if not fresh and (job is None or not job.is_alive()):
                job = threading.Thread(
                    target=self._compute, args=(name, compute, version), daemon=True
                )
                self._jobs[name] = job
                job.start()
        if job is not None:
            job.join(wait_s)
        with self._jobs_lock:
            done = self._results.get(name)
            running = job is not None and job.is_alive()
        if done is None:
            return None, None, running
        if isinstance(done[1], EvaltallyError):
            raise done[1]
        return done[1], done[2], running

    def _compute(self, name: str, compute: Callable[[], Any], version: tuple[int, ...]) -> None:
        started = time.perf_counter()
        try:
            value = compute()
        except EvaltallyError as exc:
            value = exc
        with self._jobs_lock:
            self._results[name] = (version, value, time.time(), time.perf_counter() - started)

    def _load(self) -> None:
        with self._lock:
            if self._loaded:
                return
            from evaltally.benchmarks.binding import load_benchmarks
            from evaltally.config.run_dir import load_run_config

            try:
                self._config = load_run_config(self.run_dir)
                self._benchmarks = load_benchmarks(self._config)
            except EvaltallyError as exc:
                self.config_note = f"the run's config or data could not be loaded: {exc}"
            self._loaded = True

    def config(self) -> SweepConfig | None:
        self._load()
        return self._config

    def benchmark(self, label: str) -> Benchmark | None:
        self._load()
        return self._benchmarks.get(label)


def open_runs(run_dirs: Sequence[Path]) -> dict[str, ViewRun]:
    """Name -> run for every directory given; refuses a directory without a readable ledger."""
    runs: dict[str, ViewRun] = {}
    for given in run_dirs:
        run_dir = Path(given).resolve()
        if not ledger_path(run_dir).is_file():
            raise LedgerError(
                f"{given}: no ledger.sqlite here; pass run directories created by `tally run`"
            )
        connect_ro(ledger_path(run_dir)).close()
        name = run_dir.name
        n = 2
        while name in runs:
            name = f"{run_dir.name}-{n}"
            n += 1
        runs[name] = ViewRun(name, run_dir)
    return runs
