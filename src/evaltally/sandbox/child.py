"""The child side of the sandbox: limits, a guard, soft stops and a private result channel.

Standard library only and no imports from evaltally, on purpose: ``worker.py`` (the fork
server, a bare ``python -S`` interpreter without site-packages) loads this file by path, and
CTE's child imports it as ``evaltally.sandbox.child``. Everything here runs inside a child
process, never in the caller's.

The guard is an audit hook (PEP 578): once installed it cannot be removed, and it refuses, with
``PermissionError``, the events a benchmark program has no business raising: starting processes
(fork, exec, spawn, system, subprocess), signalling other processes, sockets of any kind, ctypes,
symlinks and hard links, and writing, creating, renaming or deleting anything outside the
working directory. It is containment for benchmark code and a second layer only: code in the
process can switch it off (its lists are module globals), so the boundary is the kernel's
(``boundary.py``: namespaces), and ``forbid_processes`` adds a seccomp filter the code cannot
remove.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import IO, Any

#: Events refused outright (exact names).
REFUSED_EVENTS = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.kill",
        "os.killpg",
        "os.symlink",
        "os.link",
        "os.chroot",
        "signal.pthread_kill",
        "subprocess.Popen",
        "pty.spawn",
    }
)
#: Events refused by prefix: every socket operation (no network), every ctypes operation.
REFUSED_PREFIXES = ("socket.", "ctypes.")
#: Imports refused: the one module that forks without raising an audit event of its own.
REFUSED_IMPORTS = frozenset({"_posixsubprocess"})
#: Events whose first argument (and second, for rename) is a path that must stay inside the root.
PATH_EVENTS = frozenset(
    {
        "os.remove",
        "os.rename",
        "os.mkdir",
        "os.rmdir",
        "os.chmod",
        "os.chown",
        "os.truncate",
        "os.utime",
        "os.mkfifo",
        "os.mknod",
        "os.setxattr",
        "os.removexattr",
        "shutil.rmtree",
    }
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class Stopped(BaseException):
    """Raised inside the running program when a soft limit (CPU time, wall clock) is reached.

    A BaseException, so the program's own ``except Exception`` does not swallow it; the task
    catches it and still reports what ran before the stop."""


def open_protocol() -> IO[str]:
    """A private copy of stdout for result lines; fd 1 and ``sys.stdout`` then go to stderr,
    so whatever the program prints cannot be mistaken for a result."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def apply_limits(
    *, memory_bytes: int, file_bytes: int | None = None, processes: int | None = None
) -> None:
    """Address space, core size, file size (SIGXFSZ beyond it) and process count.

    Some platforms refuse RLIMIT_AS; RLIMIT_NPROC does not bind root (the guard still refuses
    forks); each is applied where the kernel accepts it."""
    wanted = [(resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_CORE, 0)]
    if file_bytes is not None:
        wanted.append((resource.RLIMIT_FSIZE, file_bytes))
    if processes is not None:
        wanted.append((resource.RLIMIT_NPROC, processes))
    for which, value in wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))


#: Per machine: the seccomp audit arch and the syscalls that create a process.
_PROCESS_SYSCALLS = {
    "x86_64": (0xC000003E, {"clone": 56, "fork": 57, "vfork": 58, "clone3": 435}),
    "aarch64": (0xC00000B7, {"clone": 220, "clone3": 435}),
}
_CLONE_THREAD = 0x00010000
_X32_SYSCALL_BIT = 0x40000000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_ENOSYS, _EAGAIN = 38, 11


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple[int, int, int, int]:
    return code, jt, jf, k


def _no_process_filter(arch: int, calls: dict[str, int]) -> list[tuple[int, int, int, int]]:
    """A seccomp program: new processes fail with EAGAIN, threads (clone with CLONE_THREAD)
    are allowed; clone3, whose flags a filter cannot read, fails with ENOSYS so the C library
    falls back to clone. Another architecture's calls, and x32 ones, fail too."""
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    deny = _RET_ERRNO | _EAGAIN
    prog = [_bpf(ld, 4), _bpf(jeq, arch, 1, 0), _bpf(ret, deny), _bpf(ld, 0)]
    prog.append(_bpf(jge, _X32_SYSCALL_BIT, 0, 1))
    prog.append(_bpf(ret, deny))
    prog.append(_bpf(jeq, calls["clone3"], 0, 1))
    prog.append(_bpf(ret, _RET_ERRNO | _ENOSYS))
    for name in ("fork", "vfork"):
        if name in calls:
            prog += [_bpf(jeq, calls[name], 0, 1), _bpf(ret, deny)]
    prog.append(_bpf(jeq, calls["clone"], 1, 0))
    prog.append(_bpf(ret, _RET_ALLOW))
    prog.append(_bpf(ld, 16))  # the low 32 bits of clone's flags (little-endian)
    prog.append(_bpf(jset, _CLONE_THREAD, 0, 1))
    prog.append(_bpf(ret, _RET_ALLOW))
    prog.append(_bpf(ret, deny))
    return prog


def forbid_processes() -> bool:
    """From now on this process cannot create processes (a seccomp filter: the kernel refuses
    fork, vfork and clone without CLONE_THREAD, whatever the program does to its interpreter).
    RLIMIT_NPROC does that only for a uid other than root's, and the sandbox's uid is root's
    outside its namespace when bwrap runs as root. False on a machine without a known syscall
    table (the guard is then the only refusal)."""
    machine = os.uname().machine
    if machine not in _PROCESS_SYSCALLS or sys.byteorder != "little":
        return False
    import ctypes

    class Filter(ctypes.Structure):
        _fields_ = (
            ("code", ctypes.c_uint16),
            ("jt", ctypes.c_uint8),
            ("jf", ctypes.c_uint8),
            ("k", ctypes.c_uint32),
        )

    class Program(ctypes.Structure):
        _fields_ = (("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Filter)))

    rules = _no_process_filter(*_PROCESS_SYSCALLS[machine])
    table = (Filter * len(rules))(*(Filter(*rule) for rule in rules))
    program = Program(len(rules), table)
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(program), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
    return True


def cpu_budget(seconds: int, *, grace: int | None = None) -> None:
    """Let the process use ``seconds`` more CPU before SIGXCPU (default action: terminate).

    With ``grace``, the hard limit (SIGKILL from the kernel) sits ``grace`` seconds later, for
    a caller that turns SIGXCPU into ``Stopped`` (``arm_soft_stops``)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime) + 1 + seconds
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if grace is not None and hard == resource.RLIM_INFINITY:
        hard = soft + grace
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def arm_soft_stops(cpu_seconds: int, wall_seconds: float) -> None:
    """Raise ``Stopped`` in the program at the CPU soft limit or after ``wall_seconds``."""

    def stop(signum: int, frame: FrameType | None) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        raise Stopped("CPU time limit" if signum == signal.SIGXCPU else "wall-clock limit")

    signal.signal(signal.SIGXCPU, stop)
    signal.signal(signal.SIGALRM, stop)
    cpu_budget(cpu_seconds, grace=1)
    signal.setitimer(signal.ITIMER_REAL, wall_seconds)


def disarm_soft_stops() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGXCPU, signal.SIG_DFL)


def death_reason(status: int, tail: str) -> str:
    """One line: why a child ended without a result (``status`` as from
    ``os.waitstatus_to_exitcode``: negative for a signal; ``tail`` = its last stderr line)."""
    if status < 0:
        name = signal.Signals(-status).name
        why = {"SIGXCPU": "CPU limit exceeded", "SIGXFSZ": "file size limit exceeded"}.get(
            name, f"killed by {name}"
        )
    else:
        why = f"exited with status {status}"
    if "MemoryError" in tail:
        why = "memory limit exceeded"
    return why + (f" ({tail})" if tail else "")


def is_limit(status: int, tail: str) -> bool:
    """Whether a child that ended this way was stopped by a limit rather than failing."""
    return status < 0 or "MemoryError" in tail


def stderr_tail(fd: int, size: int = 400) -> str:
    """The last line of what a child wrote to the file ``fd`` (bounded), for messages."""
    end = os.lseek(fd, 0, os.SEEK_END)
    os.lseek(fd, max(0, end - size), os.SEEK_SET)
    lines = os.read(fd, size).decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else ""


def _inside(root: str, path: Any) -> bool:
    if isinstance(path, int):  # an already open descriptor: nothing new is reached
        return True
    try:
        real = os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return False
    return real == root or real.startswith(root + os.sep)


def _refusal(root: str) -> Callable[[str, tuple[Any, ...]], str | None]:
    def why(event: str, args: tuple[Any, ...]) -> str | None:
        if event in REFUSED_EVENTS or event.startswith(REFUSED_PREFIXES):
            return event
        if event == "import" and args and args[0] in REFUSED_IMPORTS:
            return f"import {args[0]}"
        if event == "open" and len(args) >= 3:
            flags = args[2] if isinstance(args[2], int) else 0
            mode = args[1] if isinstance(args[1], str) else ""
            writes = flags & _WRITE_FLAGS or any(c in mode for c in "wax+")
            if writes and not _inside(root, args[0]):
                return f"writing {args[0]!r} outside the working directory"
        if event in PATH_EVENTS:
            paths = args[:2] if event == "os.rename" else args[:1]
            bad = [p for p in paths if not _inside(root, p)]
            if bad:
                return f"{event} on {bad[0]!r} outside the working directory"
        return None

    return why


def install_guard(root: str) -> None:
    """Refuse process creation, signals to others, sockets, ctypes and writes outside ``root``
    for the rest of this process's life (see the module docstring)."""
    why = _refusal(os.path.realpath(root))
    for name in (*REFUSED_IMPORTS, "subprocess"):
        sys.modules.pop(name, None)  # a later import must go through the hook

    def hook(event: str, args: tuple[Any, ...]) -> None:
        reason = why(event, args)
        if reason is not None:
            raise PermissionError(f"sandbox: {reason} is not allowed")

    sys.addaudithook(hook)
