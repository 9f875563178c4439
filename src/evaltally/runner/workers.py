"""A small pool of worker processes for verification jobs, driven from asyncio.

Verification (running a model's proposed input through a program, say) must never block the
event loop or another lane, must survive a check that hangs or crashes, and must stop with the
session. Each worker is a `python -m evaltally.runner.verify_worker` subprocess in its own
process group, fed one job at a time over a pipe. A job that outlives its timeout, or whose
worker dies, gets an `error` verdict with the reason; its worker (with anything the check
started) is killed and a fresh one takes the next job.

Workers start with a fixed, minimal environment (`worker_env`): the sandbox's hash seed and
UTF-8 mode, PYTHONPATH when set (a check outside the package is imported by name) and the
bwrap location when set (`sandbox.boundary`). No credential or other variable of the sweep
reaches a check. A check that runs supplied code (DexBench's) does not run it in the worker: it
hands it to a fork server inside the OS boundary (`sandbox.inline`), so the program sees no
process of the host, this worker and `tally` included.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
from dataclasses import dataclass
from typing import Any

import orjson

from evaltally.benchmarks.base import VerificationJob
from evaltally.sandbox.boundary import BWRAP_ENV
from evaltally.sandbox.runner import TASK_ENV

WORKER = "evaltally.runner.verify_worker"
# A worker asked to stop (stdin closed) gets this long before it is killed.
STOP_GRACE_S = 2.0


@dataclass(frozen=True, slots=True)
class Verdict:
    status: str
    """passed, failed or error."""
    detail: Any = None
    reason: str | None = None


def worker_env() -> dict[str, str]:
    env = dict(TASK_ENV)
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    # The workers have no PATH: they use the bwrap this process found (or was told to use).
    bwrap = os.environ.get(BWRAP_ENV) or shutil.which("bwrap")
    if bwrap:
        env[BWRAP_ENV] = bwrap
    return env


class _Worker:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls) -> _Worker:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            WORKER,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
            env=worker_env(),
        )
        return cls(proc)

    async def run(self, request: bytes, timeout_s: float) -> Verdict:
        """The verdict; a worker that timed out or died is killed (its returncode is set)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(request)
            await self.proc.stdin.drain()
            async with asyncio.timeout(timeout_s):
                line = await self.proc.stdout.readline()
        except TimeoutError:
            await self.kill()
            return Verdict("error", reason=f"timed out after {timeout_s:g}s")
        except (ConnectionError, OSError):
            line = b""
        if not line:
            code = await self.kill()
            return Verdict("error", reason=f"the verification process died (exit status {code})")
        reply = orjson.loads(line)
        return Verdict(reply["verdict"], reply.get("detail"), reply.get("reason"))

    async def kill(self) -> int | None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return await self.proc.wait()

    async def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            async with asyncio.timeout(STOP_GRACE_S):
                await self.proc.wait()
        except TimeoutError:
            await self.kill()


class WorkerPool:
    """At most `size` worker processes, started on first use; `close()` stops them all."""

    def __init__(self, size: int | None = None) -> None:
        self.size = size or min(4, os.cpu_count() or 1)
        self._idle: list[_Worker] = []
        self._slots = asyncio.Semaphore(self.size)
        self._all: set[_Worker] = set()

    async def run(self, job: VerificationJob) -> Verdict:
        message = {"function": job.function, "args": job.args, "timeout_s": job.timeout_s}
        try:
            request = orjson.dumps(message) + b"\n"
        except TypeError as exc:
            return Verdict("error", reason=f"the check's arguments are not JSON: {exc}")
        async with self._slots:
            worker = self._idle.pop() if self._idle else await self._start()
            verdict = await worker.run(request, job.timeout_s)
            if worker.proc.returncode is None:
                self._idle.append(worker)
            else:
                self._all.discard(worker)
            return verdict

    async def _start(self) -> _Worker:
        worker = await _Worker.start()
        self._all.add(worker)
        return worker

    async def close(self) -> None:
        workers, self._all, self._idle = list(self._all), set(), []
        await asyncio.gather(*(w.stop() for w in workers))
