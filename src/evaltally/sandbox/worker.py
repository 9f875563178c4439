"""The sandbox worker: a fork server that runs each job in a fresh, limited child process.

Runs as ``python -s -S -B -P worker.py`` (see ``runner.py``), inside the OS boundary
(``boundary.py``) unless the weaker process mode was chosen, and uses only the standard library.
It reads one start line (``{"preload": [module, ...], "isolated": bool}``), answers it with
``{"ready": true}`` once the modules are imported, and then reads one job per line
(``{"task": name, "source": text, "payload": ..., "limits": {...}}``: the task's source travels
with the job, so no file outside the package needs to be visible in the sandbox) and answers
each with one line on its private stdout: ``{"result": ...}`` or ``{"error": ..., "limit": bool}``.

The server makes itself non-dumpable, so a job cannot ptrace it or open its descriptors
through ``/proc``. Isolated (alone in its PID namespace), after each job it also kills every
process of the namespace but itself and the namespace's init: nothing a program started
outlives its job.

Per job it forks: the child starts a new session, gets /dev/null as stdin, a temporary file as
stdout and stderr (bounded by RLIMIT_FSIZE), a new empty working directory, the memory, file,
process and CPU limits, a seccomp filter that refuses new processes (``child.forbid_processes``),
the guard (``child.install_guard``), the soft stops, ``random.seed(0)``,
and then calls the task's ``run(payload, child_module)``; it writes the JSON result to a pipe
and exits. The worker reads the pipe with a wall-clock deadline and a size cap, kills the
child's process group when either is passed, reaps it and removes its directory. Forking from
a warm worker (modules preloaded) costs about a millisecond where a new interpreter that imports
``unittest`` costs tens; every job still gets a process of its own, so nothing a program does
outlives its job.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time
from typing import IO, Any, NoReturn

MAX_FD = 1 << 16
HERE = os.path.dirname(os.path.abspath(__file__))  # noqa: PTH100, PTH120 - runs without pathlib preloaded on purpose


def _load(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


child = _load(os.path.join(HERE, "child.py"), "_evaltally_sandbox_child")  # noqa: PTH118


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _in_child(task: Any, job: dict[str, Any], root: str, pipe: int, err: int) -> NoReturn:
    status = 0
    try:
        os.setsid()
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(err, 1)
        os.dup2(err, 2)
        # Only the result pipe stays open: no descriptor of the parent (its reply channel, its
        # job pipe) is within the program's reach.
        pipe = os.dup2(pipe, 3)
        os.closerange(4, MAX_FD)
        os.chdir(root)
        lim = job["limits"]
        child.apply_limits(
            memory_bytes=int(lim["memory_bytes"]), file_bytes=int(lim["file_bytes"]), processes=0
        )
        import random

        random.seed(0)
        child.forbid_processes()
        child.install_guard(root)
        child.arm_soft_stops(int(lim["cpu_seconds"]), float(lim["soft_wall_seconds"]))
        try:
            line: dict[str, Any] = {"result": task.run(job["payload"], child)}
        finally:
            child.disarm_soft_stops()
        data = json.dumps(line).encode()
    except child.Stopped as exc:  # the task let a soft stop through
        data = json.dumps({"error": f"stopped at the {exc}", "limit": True}).encode()
    except MemoryError:
        data = json.dumps({"error": "memory limit exceeded", "limit": True}).encode()
    except BaseException as exc:  # the task failed: report it as a line, never a traceback
        data = json.dumps({"error": f"{type(exc).__name__}: {exc}"[:500]}).encode()
    try:
        _write_all(pipe, data)
    except BaseException:
        status = 1
    os._exit(status)


def _collect(fd: int, deadline: float, cap: int) -> bytes | str:
    """Everything the child writes until EOF, or why reading stopped early."""
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout"
        if not select.select([fd], [], [], remaining)[0]:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > cap:
            return "output"
        chunks.append(chunk)


def _reap(pid: int, deadline: float) -> int:
    """The child's exit status (``waitstatus_to_exitcode`` form); killed after ``deadline``."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= deadline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        time.sleep(0.002)


def _outcome(data: bytes | str, status: int, err: int, lim: dict[str, Any]) -> dict[str, Any]:
    if data == "timeout":
        wall = lim["soft_wall_seconds"]
        return {"error": f"timed out after {wall:g} s wall clock", "limit": True}
    if data == "output":
        return {"error": f"wrote more than {lim['output_bytes']} bytes", "limit": True}
    assert isinstance(data, bytes)
    if status == 0 and data:
        try:
            line = json.loads(data)
        except ValueError:
            line = None
        if isinstance(line, dict) and "result" in line:
            return {"result": line["result"]}
        if isinstance(line, dict) and "error" in line:
            return {"error": str(line["error"]), "limit": bool(line.get("limit"))}
    tail = child.stderr_tail(err)
    return {"error": child.death_reason(status, tail), "limit": child.is_limit(status, tail)}


def run_job(task: Any, job: dict[str, Any]) -> dict[str, Any]:
    lim = job["limits"]
    root = tempfile.mkdtemp(prefix="evaltally-sandbox-")
    read_end, write_end = os.pipe()
    with tempfile.TemporaryFile() as err:
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _in_child(task, job, root, write_end, err.fileno())
        os.close(write_end)
        deadline = time.monotonic() + float(lim["hard_wall_seconds"])
        try:
            data = _collect(read_end, deadline, int(lim["output_bytes"]))
            if isinstance(data, str):
                deadline = 0.0  # kill now
            status = _reap(pid, deadline)
            return _outcome(data, status, err.fileno(), lim)
        finally:
            os.close(read_end)
            shutil.rmtree(root, ignore_errors=True)


def load_task(name: str, source: str, number: int) -> Any:
    """A task's source as a module of its own (``run(payload, sandbox)``)."""
    module = type(sys)(f"_evaltally_sandbox_task_{number}")
    module.__file__ = name
    exec(compile(source, name, "exec", dont_inherit=True), module.__dict__)
    return module


def _not_dumpable() -> None:
    """PR_SET_DUMPABLE 0: no process of the same uid may ptrace this one or open its /proc
    entries (its descriptors, its memory); forked children inherit it."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def sweep() -> None:
    """Kill every process of this PID namespace except its init (1) and this server."""
    for name in os.listdir("/proc"):  # noqa: PTH208 - no pathlib in the server, as above
        if name.isdigit() and int(name) not in (1, os.getpid()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(name), signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def serve(stdin: IO[bytes], proto: IO[str]) -> None:
    start = json.loads(stdin.readline())
    isolated = bool(start.get("isolated"))
    _not_dumpable()  # imports ctypes, which every child's seccomp filter needs
    for name in start.get("preload", []):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    proto.write(json.dumps({"ready": True}) + "\n")
    proto.flush()
    tasks: dict[str, Any] = {}
    for raw in stdin:
        job = json.loads(raw)
        name = job["task"]
        if name not in tasks:
            tasks[name] = load_task(name, job["source"], len(tasks))
        reply = run_job(tasks[name], job)
        if isolated:
            sweep()
        proto.write(json.dumps(reply) + "\n")
        proto.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, child.open_protocol())
