"""The shared sandbox: every job in its own limited child, hostile programs stopped or contained,
the event loop never blocked, workers gone after the pool closes."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from evaltally.sandbox import TaskLimits, TaskOutcome, TaskPool

# A task that runs the payload's code and returns its ``result`` variable (test code only).
EXEC_TASK = """
def run(payload, sandbox):
    namespace = {}
    exec(payload["code"], namespace)
    return namespace.get("result")
"""
FAST = TaskLimits(cpu_seconds=1, wall_seconds=2.0, kill_grace_seconds=1.0)

Runner = Callable[..., Coroutine[Any, Any, TaskOutcome]]


@pytest.fixture
def task(tmp_path: Path) -> Path:
    path = tmp_path / "exec_task.py"
    path.write_text(EXEC_TASK)
    return path


@pytest.fixture
async def run(task: Path) -> Any:
    async with TaskPool(2) as pool:

        async def go(code: str, limits: TaskLimits = FAST) -> TaskOutcome:
            return await pool.run(task, {"code": code}, limits)

        yield go


async def test_a_result_comes_back_and_prints_cannot_forge_it(run: Runner) -> None:
    code = "print('{\"result\": 666}')\nimport sys\nsys.stderr.write('noise')\nresult = [1, 'a']"
    assert await run(code) == TaskOutcome(result=[1, "a"])


async def test_the_child_has_a_fixed_hash_seed_random_seed_and_a_near_empty_environment(
    run: Runner,
) -> None:
    code = (
        "import os, random\n"
        "result = [hash('dexbench'), random.random(), sorted(os.environ), os.listdir('.')]"
    )
    first, second = await run(code), await run(code)
    assert first.result == second.result
    assert set(first.result[2]) <= {"PYTHONHASHSEED", "PYTHONUTF8", "LC_CTYPE", "PWD"}
    assert first.result[3] == []


async def test_an_infinite_loop_is_stopped_at_the_cpu_limit(run: Runner) -> None:
    out = await run("while True:\n    pass", TaskLimits(cpu_seconds=1, wall_seconds=60.0))
    assert out.result is None and out.limit
    assert out.error == "stopped at the CPU time limit"


async def test_a_loop_that_swallows_the_soft_stop_is_killed(run: Runner) -> None:
    code = "while True:\n    try:\n        while True: pass\n    except BaseException: pass"
    started = time.monotonic()
    out = await run(code)
    assert out.limit and out.result is None  # a stop that escaped, the kernel or the worker
    assert time.monotonic() - started < 15


async def test_sleeping_forever_is_stopped_by_the_wall_clock(run: Runner) -> None:
    started = time.monotonic()
    out = await run("import time\ntime.sleep(600)")
    assert out.error == "stopped at the wall-clock limit" and out.limit
    assert time.monotonic() - started < 10


async def test_a_sleeper_that_swallows_the_stop_is_killed_by_the_worker(run: Runner) -> None:
    code = "import time\nwhile True:\n    try: time.sleep(600)\n    except BaseException: pass"
    out = await run(code)
    assert out.limit and out.error == "timed out after 2 s wall clock"


async def test_unbounded_allocation_meets_the_memory_limit(run: Runner) -> None:
    limits = TaskLimits(memory_bytes=256 * 1024 * 1024, cpu_seconds=5, wall_seconds=10.0)
    out = await run("x = []\nwhile True:\n    x.append(bytearray(10**6))", limits)
    assert out.limit and out.error is not None and "memory limit" in out.error


async def test_fork_subprocess_and_system_are_refused(run: Runner) -> None:
    code = """
import os
result = []
for attempt in (os.fork, lambda: os.system("true"), lambda: __import__("subprocess")):
    try:
        attempt()
        result.append("ran")
    except (PermissionError, ImportError) as exc:
        result.append(str(exc))
"""
    out = await run(code)
    assert out.result == [
        "sandbox: os.fork is not allowed",
        "sandbox: os.system is not allowed",
        "sandbox: import _posixsubprocess is not allowed",
    ]


async def test_sockets_are_refused(run: Runner) -> None:
    code = """
import socket
result = []
for attempt in (socket.socket, lambda: socket.create_connection(("127.0.0.1", 9), timeout=1)):
    try:
        attempt()
        result.append("connected")
    except PermissionError as exc:
        result.append(str(exc))
"""
    assert (await run(code)).result == [
        "sandbox: socket.__new__ is not allowed",
        "sandbox: socket.getaddrinfo is not allowed",
    ]


async def test_signals_to_other_processes_are_refused(run: Runner) -> None:
    code = "import os\ntry: os.kill(os.getppid(), 9)\nexcept PermissionError as e: result = str(e)"
    assert (await run(code)).result == "sandbox: os.kill is not allowed"


async def test_writes_stay_inside_the_working_directory(run: Runner, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    keep = tmp_path / "keep.txt"
    keep.write_text("mine")
    code = f"""
import os
result = []
home = os.getcwd()
open("inside.txt", "w").write("ok")
result.append(os.path.exists("inside.txt"))
for attempt in (
    lambda: open({str(outside)!r}, "w"),
    lambda: os.open({str(outside)!r}, os.O_CREAT | os.O_WRONLY),
    lambda: os.remove({str(keep)!r}),
    lambda: os.rename("inside.txt", {str(outside)!r}),
    lambda: os.symlink({str(keep)!r}, "link"),
    lambda: (os.chdir(".."), open("escaped.txt", "w")),
):
    try:
        attempt()
        result.append("done")
    except PermissionError as exc:
        result.append("refused")
result.append(home)
"""
    out = await run(code)
    assert out.result[:7] == [True] + ["refused"] * 6
    assert not outside.exists() and keep.read_text() == "mine"
    assert _gone(out.result[7])  # the job's directory went with the job


def _gone(path: str) -> bool:
    return not Path(path).exists()


async def test_file_size_is_limited(run: Runner) -> None:
    limits = TaskLimits(file_bytes=1024 * 1024, cpu_seconds=2, wall_seconds=5.0)
    code = """
try:
    with open("big.bin", "wb") as fh:
        fh.write(b"x" * (4 * 1024 * 1024))
    result = "written"
except OSError as exc:
    result = exc.strerror
"""
    assert (await run(code, limits)).result == "File too large"


async def test_an_oversized_result_is_refused(run: Runner) -> None:
    limits = TaskLimits(output_bytes=1000, cpu_seconds=1, wall_seconds=2.0)
    out = await run("result = 'x' * 5000", limits)
    assert out.limit and out.error == "wrote more than 1000 bytes"


async def test_a_task_error_is_a_line_not_a_crash(run: Runner) -> None:
    out = await run("raise ValueError('bad program')")
    assert out == TaskOutcome(error="ValueError: bad program", limit=False)


async def test_jobs_are_bounded_and_the_event_loop_keeps_running(task: Path) -> None:
    code = "import time\nstart = time.time()\ntime.sleep(0.4)\nresult = [start, time.time()]"
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    async with TaskPool(2) as pool:
        beat = asyncio.create_task(ticker())
        outs = await asyncio.gather(*(pool.run(task, {"code": code}, FAST) for _ in range(5)))
        beat.cancel()
    spans = [o.result for o in outs]
    for s0, _ in spans:
        assert sum(1 for a, b in spans if a <= s0 < b) <= 2  # never more than 2 at once
    assert ticks >= 30  # ~1.2 s of jobs; the loop ticked throughout


async def test_a_dead_worker_is_replaced_and_closing_ends_the_workers(task: Path) -> None:
    pool = TaskPool(1)
    first = await pool.run(task, {"code": "result = 1"}, FAST)
    [worker] = pool._workers
    worker.proc.kill()
    await worker.proc.wait()
    second = await pool.run(task, {"code": "result = 2"}, FAST)
    assert (first.result, second.result) == (1, 2)
    [replacement] = pool._workers
    await pool.close()
    assert replacement.proc.returncode == 0
    with pytest.raises(ProcessLookupError):
        os.kill(replacement.proc.pid, 0)
