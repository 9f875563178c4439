"""The parent side of the sandbox: a bounded pool of fork-server workers for asyncio callers.

A worker is ``python -s -S -B -P worker.py`` (no user site, no site-packages, no bytecode
writes, no script directory on ``sys.path``) started inside the OS boundary (``boundary.py``:
bubblewrap namespaces, uid 65534, a read-only view of the interpreter and the package) with an
environment holding only ``PYTHONHASHSEED=0`` and ``PYTHONUTF8=1``: string hashing, and with it
set iteration order and a program's path, is the same on every run (``-I`` would ignore the
seed; with the environment otherwise empty nothing else can leak in). Each job runs in its own
forked child with the limits of ``TaskLimits`` (see ``worker.py``); the worker enforces the
job's wall clock, and this side adds a backstop: a worker that stops answering is killed and
replaced. A worker that dies or stops answering while it runs a job ends that job with a
``limit`` outcome (the program took its sandbox down: a verdict on it, not a failure of the
tool); one that cannot start is a ``SandboxError``.

``TaskPool.run`` awaits a pipe: it never blocks the event loop, and at most ``jobs`` jobs run
at once. Use it as ``async with TaskPool() as pool`` so its workers end with the block.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from evaltally.errors import SandboxError
from evaltally.sandbox.boundary import Boundary

WORKER = Path(__file__).with_name("worker.py")
MIB = 1024 * 1024
TASK_ENV = {"PYTHONHASHSEED": "0", "PYTHONUTF8": "1"}
#: Beyond a job's hard wall clock, how long the worker may take to answer before it is replaced.
WORKER_GRACE_SECONDS = 15.0
#: How long a new worker may take to import its preloaded modules and say it is ready.
START_SECONDS = 60.0


@dataclass(frozen=True)
class TaskLimits:
    """Limits of one job. At ``cpu_seconds`` of CPU or ``wall_seconds`` of wall clock the
    program is stopped inside the child (the task still reports); one second of CPU later the
    kernel kills it, ``kill_grace_seconds`` of wall clock later the worker does."""

    cpu_seconds: int = 5
    memory_bytes: int = 512 * MIB
    file_bytes: int = 8 * MIB
    wall_seconds: float = 10.0
    kill_grace_seconds: float = 3.0
    output_bytes: int = 4 * MIB

    def as_job(self) -> dict[str, Any]:
        return {
            "cpu_seconds": self.cpu_seconds,
            "memory_bytes": self.memory_bytes,
            "file_bytes": self.file_bytes,
            "soft_wall_seconds": self.wall_seconds,
            "hard_wall_seconds": self.wall_seconds + self.kill_grace_seconds,
            "output_bytes": self.output_bytes,
        }


@dataclass(frozen=True)
class TaskOutcome:
    """What a task returned (``result``), or one line saying why there is nothing; ``limit``
    tells a job stopped by a limit (time, memory, file or output size) from a sandbox that
    failed by itself (no result line, the task raised, the worker died)."""

    result: Any = None
    error: str | None = None
    limit: bool = False


def outcome_of(reply: dict[str, Any]) -> TaskOutcome:
    """A worker's reply line (``worker.run_job``) as a ``TaskOutcome``."""
    if "result" in reply:
        return TaskOutcome(result=reply["result"])
    return TaskOutcome(error=str(reply["error"]), limit=bool(reply.get("limit")))


def job_deadline(limits: TaskLimits) -> float:
    """How long a worker may take to answer one job before it is given up."""
    return limits.wall_seconds + limits.kill_grace_seconds + WORKER_GRACE_SECONDS


def worker_command(boundary: Boundary) -> list[str]:
    """The fork server's command line, inside ``boundary``."""
    return boundary.command([sys.executable, "-s", "-S", "-B", "-P", str(WORKER)], TASK_ENV)


def start_line(boundary: Boundary, preload: Sequence[str]) -> bytes:
    return json.dumps({"preload": list(preload), "isolated": boundary.isolated}).encode() + b"\n"


def check_ready(raw: bytes) -> None:
    """The worker's first line must say it is ready; anything else: it could not start."""
    try:
        ready = json.loads(raw).get("ready") is True
    except (ValueError, AttributeError):
        ready = False
    if not ready:
        raise SandboxError("the sandbox worker did not start (no ready line)")


def lost_job(exc: BaseException) -> TaskOutcome:
    """A job whose worker died or stopped answering: the program took its sandbox down."""
    why = "stopped answering" if isinstance(exc, TimeoutError) else "died"
    return TaskOutcome(error=f"the sandbox worker {why} while running this program", limit=True)


class TaskSources:
    """Task files' text, read once: a job carries its task's source into the sandbox."""

    def __init__(self) -> None:
        self._text: dict[str, str] = {}

    def job(self, task: Path, payload: Any, limits: TaskLimits) -> dict[str, Any]:
        key = str(task)
        if key not in self._text:
            self._text[key] = task.read_text(encoding="utf-8")
        return {
            "task": key,
            "source": self._text[key],
            "payload": payload,
            "limits": limits.as_job(),
        }


class _Worker:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, boundary: Boundary, preload: Sequence[str], line_limit: int) -> _Worker:
        boundary.require("the sandbox")  # no bwrap: one line saying how to get it
        proc = await asyncio.create_subprocess_exec(
            *worker_command(boundary),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=TASK_ENV,
            cwd=os.sep,
            limit=line_limit,
        )
        worker = cls(proc)
        assert proc.stdin is not None and proc.stdout is not None
        try:
            async with asyncio.timeout(START_SECONDS):
                proc.stdin.write(start_line(boundary, preload))
                await proc.stdin.drain()
                check_ready(await proc.stdout.readline())
        except (TimeoutError, ConnectionError, OSError, SandboxError) as exc:
            await worker.stop(kill=True)
            raise SandboxError(f"the sandbox worker did not start: {exc or type(exc)}") from exc
        return worker

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def ask(self, job: dict[str, Any], timeout: float) -> TaskOutcome:
        assert self.proc.stdout is not None
        async with asyncio.timeout(timeout):
            await self._send(job)
            raw = await self.proc.stdout.readline()
        if not raw:
            raise ConnectionError("the sandbox worker exited")
        return outcome_of(json.loads(raw))

    async def stop(self, *, kill: bool) -> None:
        if self.alive:
            if kill:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
            elif self.proc.stdin is not None:
                self.proc.stdin.close()  # the worker ends at end of input
        with contextlib.suppress(ProcessLookupError):
            await self.proc.wait()


class TaskPool:
    """At most ``jobs`` sandboxed jobs at once (default: the CPU count). ``preload`` names
    modules every worker imports once, so a job's program finds them already loaded."""

    def __init__(
        self, jobs: int | None = None, preload: Sequence[str] = (), boundary: Boundary | None = None
    ) -> None:
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.preload = tuple(preload)
        self.boundary = boundary or Boundary()
        self._sources = TaskSources()
        self._idle: asyncio.Queue[_Worker | None] | None = None
        self._workers: set[_Worker] = set()

    async def __aenter__(self) -> TaskPool:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _take(self, limits: TaskLimits) -> _Worker:
        if self._idle is None:
            self._idle = asyncio.Queue()
            for _ in range(self.jobs):
                self._idle.put_nowait(None)
        # This job's own queue: `close` may drop the pool's while a worker is starting (a
        # failed start of a sibling job ends the caller's task group and closes the pool).
        idle = self._idle
        worker = await idle.get()
        if worker is not None and not worker.alive:
            self._workers.discard(worker)
            worker = None
        if worker is None:
            try:
                worker = await _Worker.start(self.boundary, self.preload, limits.output_bytes + MIB)
            except BaseException:
                idle.put_nowait(None)
                raise
            self._workers.add(worker)
        return worker

    async def run(self, task: Path, payload: Any, limits: TaskLimits | None = None) -> TaskOutcome:
        """Run ``task`` (a file defining ``run(payload, sandbox) -> JSON``) in a fresh child."""
        lim = limits or TaskLimits()
        job = self._sources.job(task, payload, lim)
        worker = await self._take(lim)
        assert self._idle is not None
        try:
            outcome = await worker.ask(job, job_deadline(lim))
        except (TimeoutError, ConnectionError, ValueError, OSError) as exc:
            await self._drop(worker)
            return lost_job(exc)
        except BaseException:
            await self._drop(worker)
            raise
        self._idle.put_nowait(worker)
        return outcome

    async def _drop(self, worker: _Worker) -> None:
        assert self._idle is not None
        self._workers.discard(worker)
        self._idle.put_nowait(None)
        await worker.stop(kill=True)

    async def close(self) -> None:
        """End every worker (they exit at end of input; no job is running when this is
        awaited after the last ``run``)."""
        workers, self._workers, self._idle = self._workers, set(), None
        for worker in workers:
            await worker.stop(kill=False)
