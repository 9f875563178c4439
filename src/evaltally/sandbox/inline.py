"""Run a sandbox task synchronously, for a caller that is itself a worker process.

The verification hook's workers (``runner/verify_worker.py``) call it from a benchmark's check,
off any event loop. The task runs in a child of a fork server (``worker.py``) that this process
starts once per boundary and preload list, inside the OS boundary (``boundary.py``), and then
keeps: the same server, limits and child as ``TaskPool``'s, reached over a pipe. The calling
process itself never runs the code: a program that takes its server down (kills it, stops it
answering) ends its own job with a ``limit`` outcome, and the next job starts a new server.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaltally.errors import SandboxError
from evaltally.sandbox.boundary import Boundary
from evaltally.sandbox.runner import (
    START_SECONDS,
    TASK_ENV,
    TaskLimits,
    TaskOutcome,
    TaskSources,
    check_ready,
    job_deadline,
    lost_job,
    outcome_of,
    start_line,
    worker_command,
)

_sources = TaskSources()


class _Server:
    def __init__(self, boundary: Boundary, preload: Sequence[str]) -> None:
        boundary.require("the sandbox")  # no bwrap: one line saying how to get it
        self.proc = subprocess.Popen(
            worker_command(boundary),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=TASK_ENV,
            cwd=os.sep,
        )
        self._buffer = b""
        try:
            self._write(start_line(boundary, preload))
            check_ready(self.readline(START_SECONDS))
        except (TimeoutError, OSError, SandboxError) as exc:
            self.kill()
            raise SandboxError(f"the sandbox worker did not start: {exc or type(exc)}") from exc

    def _write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def readline(self, timeout: float) -> bytes:
        """One line; ``TimeoutError`` past ``timeout``, ``ConnectionError`` at end of output."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            if not select.select([fd], [], [], remaining)[0]:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise ConnectionError("the sandbox worker exited")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def ask(self, job: dict[str, Any], timeout: float) -> TaskOutcome:
        self._write(json.dumps(job).encode() + b"\n")
        return outcome_of(json.loads(self.readline(timeout)))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


_servers: dict[tuple[Boundary, tuple[str, ...]], _Server] = {}


@atexit.register
def close() -> None:
    """End this process's fork servers (each would end at end of input anyway)."""
    servers = list(_servers.values())
    _servers.clear()
    for server in servers:
        server.kill()


def run_task(
    task: Path,
    payload: Any,
    limits: TaskLimits | None = None,
    *,
    boundary: Boundary | None = None,
    preload: Sequence[str] = (),
) -> TaskOutcome:
    """Run ``task`` (a file defining ``run(payload, sandbox) -> JSON``) in a fresh child of this
    process's fork server for ``boundary`` (started on first use)."""
    lim = limits or TaskLimits()
    key = (boundary or Boundary(), tuple(preload))
    job = _sources.job(task, payload, lim)
    server = _servers.get(key)
    if server is None or server.proc.poll() is not None:
        server = _servers[key] = _Server(*key)
    try:
        return server.ask(job, job_deadline(lim))
    except (TimeoutError, ConnectionError, ValueError, OSError) as exc:
        del _servers[key]
        server.kill()
        return lost_job(exc)
