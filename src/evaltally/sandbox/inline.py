"""Run a sandbox task in a forked child of this process, synchronously.

For a caller that is itself a worker process, off any event loop: the verification hook's
workers (``runner/verify_worker.py``) call it from a benchmark's check. The child is the fork
server's (``worker.run_job``: new session, new empty working directory, limits, guard, soft
stops, ``random.seed(0)``, the result over a pipe with a deadline and a size cap); only the
server in between is missing, because the calling worker already is one process per job slot.

A forked child inherits its parent's interpreter, so the parent must be started as the fork
server is: a fixed hash seed (``PYTHONHASHSEED=0``: set iteration order, and with it a program's
path, is the same on every run) and ``PYTHONUTF8=1`` (runner/workers.py starts its workers so),
with the modules the programs import already imported (``preload``), so that a job does not pay
for them. ``run_task`` refuses to run in a process with a random hash seed.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from evaltally.errors import SandboxError
from evaltally.sandbox import worker
from evaltally.sandbox.runner import TaskLimits, TaskOutcome, outcome_of

_tasks: dict[str, ModuleType] = {}


def preload(names: Iterable[str]) -> None:
    """Import ``names`` once in this process (every child then finds them loaded)."""
    for name in names:
        importlib.import_module(name)


def run_task(task: Path, payload: Any, limits: TaskLimits | None = None) -> TaskOutcome:
    """Run ``task`` (a file defining ``run(payload, sandbox) -> JSON``) in a fresh child."""
    if sys.flags.hash_randomization:
        raise SandboxError(
            "refusing to run a sandbox task in a process with a random hash seed: a program's "
            "path would differ from run to run (start the process with PYTHONHASHSEED=0)"
        )
    key = str(task)
    if key not in _tasks:
        _tasks[key] = worker.load_task(key, len(_tasks))
    lim = limits or TaskLimits()
    job = {"task": key, "payload": payload, "limits": lim.as_job()}
    return outcome_of(worker.run_job(_tasks[key], job))
