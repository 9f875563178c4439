"""The OS boundary: what a sandboxed job sees (its own uid, PIDs, network, files, environment),
and that no bwrap means no sandbox (one line saying how to get it) unless the weaker process
mode is chosen explicitly, with its warning."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from evaltally.errors import SandboxError
from evaltally.sandbox import TaskLimits, TaskPool
from evaltally.sandbox.boundary import Boundary, SandboxUnavailable

PROBE_TASK = """
import os

def run(payload, sandbox):
    pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
    home_visible = any(os.path.exists(p) for p in payload['hidden'])
    return {'uid': os.getuid(), 'pids': pids, 'env': sorted(os.environ),
            'hidden_visible': home_visible, 'tmp': sorted(os.listdir('/tmp'))}
"""
REPO = Path(__file__).resolve().parents[2]
FAST = TaskLimits(cpu_seconds=2, wall_seconds=5.0, kill_grace_seconds=1.0)


async def test_a_job_sees_only_its_namespace_and_the_interpreter(tmp_path: Path) -> None:
    task = tmp_path / "probe.py"
    task.write_text(PROBE_TASK)
    (tmp_path / "ledger.sqlite").write_text("secret run data")
    hidden = [str(tmp_path / "ledger.sqlite"), "/etc/passwd", str(REPO / "pyproject.toml")]
    async with TaskPool(1) as pool:
        out = await pool.run(task, {"hidden": hidden}, FAST)
    assert out.error is None, out
    assert out.result["uid"] == 65534
    assert max(out.result["pids"]) < 10 and os.getpid() not in out.result["pids"]
    assert out.result["hidden_visible"] is False
    assert set(out.result["env"]) <= {"PYTHONHASHSEED", "PYTHONUTF8", "LC_CTYPE", "PWD"}
    # the job's own empty scratch directory is the only thing in the private /tmp, beside the
    # way to the interpreter or this checkout where they lie under the host's /tmp (as a CI
    # clone may): those are bound read-only on top of the private /tmp, not hidden by it
    bound = {
        Path(p).parts[2]
        for p in (sys.prefix, sys.base_prefix, REPO)
        if Path(p).parts[1:2] == ("tmp",)
    }
    scratch = [name for name in out.result["tmp"] if name not in bound]
    assert len(scratch) == 1 and scratch[0].startswith("evaltally-sandbox-")


# The guard switched off the way issue 22's answer did: the kernel still refuses processes.
UNGUARDED = """
import errno, os, sys, threading

def run(payload, sandbox):
    sandbox.REFUSED_EVENTS = frozenset()
    sandbox._inside = lambda root, path: True
    try:
        os.fork()
        forked = 'forked'
    except OSError as exc:
        forked = errno.errorcode[exc.errno]
    ran = []
    thread = threading.Thread(target=lambda: ran.append(1))
    thread.start()
    thread.join()
    try:
        open('/usr/escaped', 'w')
        wrote = 'wrote'
    except OSError as exc:
        wrote = errno.errorcode[exc.errno]
    return {'fork': forked, 'thread': ran, 'write': wrote, 'shell': os.system('true')}
"""


async def test_with_the_guard_off_the_kernel_still_refuses_processes_and_writes(
    tmp_path: Path,
) -> None:
    task = tmp_path / "unguarded.py"
    task.write_text(UNGUARDED)
    async with TaskPool(1) as pool:
        out = await pool.run(task, {}, FAST)
    assert out.result == {"fork": "EAGAIN", "thread": [1], "write": "EROFS", "shell": 32512}, out


def test_a_missing_bwrap_refuses_in_one_line_saying_how_to_install_it() -> None:
    with pytest.raises(SandboxUnavailable) as caught:
        Boundary(bwrap="/nonexistent/bwrap").require("DexBench backward verification")
    message = str(caught.value)
    assert "\n" not in message
    assert "/nonexistent/bwrap" in message and "apt-get install bubblewrap" in message
    assert 'sandbox = "process"' in message


def test_a_bwrap_that_cannot_start_refuses_too() -> None:
    with pytest.raises(SandboxUnavailable, match="cannot create its namespaces"):
        Boundary(bwrap="false").require("DexBench backward verification")


def test_process_mode_is_explicit_and_warns() -> None:
    warning = Boundary("process", bwrap="/nonexistent/bwrap").require("DexBench verification")
    assert warning is not None and "weaker process-only sandbox" in warning
    assert Boundary().require("DexBench verification") is None  # bwrap is installed here
    with pytest.raises(SandboxError, match="unknown sandbox mode 'docker'"):
        Boundary("docker")


async def test_a_worker_that_dies_at_start_is_one_sandbox_error_per_job(tmp_path: Path) -> None:
    # bwrap itself works (the start-up check passes) but the worker inside it dies at once, as
    # when the package it runs is not in the mount view; the pool is closed while jobs are
    # still starting workers, and each job still ends as a SandboxError, not an AttributeError.
    fake = tmp_path / "bwrap"
    fake.write_text('#!/bin/sh\ncase "$*" in *worker.py*) exit 1;; esac\nexec bwrap "$@"\n')
    fake.chmod(0o755)
    task = tmp_path / "task.py"
    task.write_text("def run(payload, sandbox):\n    return 1\n")
    with pytest.raises(ExceptionGroup) as failed:
        async with (
            asyncio.TaskGroup() as group,
            TaskPool(2, boundary=Boundary(bwrap=str(fake))) as pool,
        ):
            for _ in range(4):
                group.create_task(pool.run(task, None, FAST))
            for _ in range(3):  # let the jobs reach their workers' start before the pool closes
                await asyncio.sleep(0)
    assert all(isinstance(exc, SandboxError) for exc in failed.value.exceptions), failed.value
