"""The operating-system boundary around every process that runs supplied code (bubblewrap).

Code that a model or a data file supplies can switch off anything that lives in its own process
(the audit hook of ``child.py`` included), so the boundary is the kernel's: each sandbox process
(a fork-server worker, CTE's replay child) starts under ``bwrap`` with

- new user, PID, network, IPC, UTS and cgroup namespaces: no host process is visible or
  signalable, no network, no capability;
- uid and gid 65534 inside, an empty environment (only what ``env`` names), a new session and
  death with its parent;
- a mount view of its own: a tmpfs root holding read-only the Python installation (the real
  interpreter's prefix, not a virtualenv in a home or project directory), ``/usr`` and the
  system library directories, the evaltally package directory and whatever ``read_only`` adds;
  a private tmpfs ``/tmp`` (each job's empty scratch directory is made there), a fresh ``/proc``
  of the sandbox alone and a minimal ``/dev``. The run directory, the ledger, the config, the
  home and project directories and ``/etc`` are not in it.

No descriptor beyond stdin, stdout and stderr is passed (the callers close the rest).

``mode = "process"`` is the explicit, weaker alternative: the same processes and limits without
namespaces (the audit hook is then the only guard). Nothing falls back to it by itself: an OS
sandbox that cannot start is an error (``SandboxUnavailable``) naming what is missing.

The bwrap executable is ``Boundary.bwrap`` if given, else ``$EVALTALLY_BWRAP``, else ``bwrap``
on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evaltally.errors import SandboxError

OS, PROCESS = "os", "process"
MODES = (OS, PROCESS)
BWRAP_ENV = "EVALTALLY_BWRAP"
SANDBOX_UID = "65534"
INSTALL_HINT = "install it with `apt-get install bubblewrap`"
CHOOSE_PROCESS = 'choose the weaker process-only mode explicitly (sandbox = "process")'
#: System directories the interpreter may need (its shared libraries); each is bound read-only,
#: or re-created as the same symlink where the host has one (merged /usr).
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
PACKAGE_DIR = Path(__file__).resolve().parents[1]
PROBE_TIMEOUT_S = 30.0
_ready: dict[tuple[str, ...], None] = {}


class SandboxUnavailable(SandboxError):
    """The OS sandbox cannot start here: no verification (one line, with how to fix it)."""


def process_mode_warning(what: str) -> str:
    return (
        f'{what} runs in the weaker process-only sandbox (sandbox = "process"): without the '
        "kernel boundary, code a model or a data file supplies that switches the in-process "
        "guard off can read this machine's files and other processes' environments (keys "
        "included) and use the network"
    )


def interpreter() -> tuple[Path, Path]:
    """The real interpreter behind ``sys.executable`` (a virtualenv's python is a symlink into
    the installation) and the installation's prefix."""
    exe = Path(os.path.realpath(sys.executable))
    prefix = Path(os.path.realpath(sys.base_prefix))
    return exe, prefix


@dataclass(frozen=True)
class Boundary:
    """Where supplied code runs: ``os`` (bubblewrap, the default) or ``process``."""

    mode: str = OS
    bwrap: str | None = None
    read_only: tuple[str, ...] = field(default=())
    """Further directories bound read-only (CTE's child imports evaltally's dependencies)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise SandboxError(f"unknown sandbox mode {self.mode!r}; valid: {', '.join(MODES)}")

    @property
    def isolated(self) -> bool:
        return self.mode == OS

    def executable(self) -> str:
        """The bwrap executable's path; ``SandboxUnavailable`` when there is none."""
        wanted = self.bwrap or os.environ.get(BWRAP_ENV) or "bwrap"
        found = shutil.which(wanted)
        if found is None:
            where = f" ({BWRAP_ENV}={wanted})" if self.bwrap or os.environ.get(BWRAP_ENV) else ""
            raise SandboxUnavailable(
                f"no OS sandbox: bubblewrap (bwrap) not found{where}; {INSTALL_HINT}, or "
                f"{CHOOSE_PROCESS}"
            )
        return found

    def command(self, argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
        """``argv`` (its first item a python executable) as run inside the boundary, with
        exactly ``env`` as its environment. In process mode: ``argv`` with the real
        interpreter; the caller passes ``env`` to the process itself."""
        exe, prefix = interpreter()
        inner = [str(exe), *argv[1:]]
        if not self.isolated:
            return inner
        cmd = [self.executable(), "--unshare-all", "--unshare-user", "--disable-userns"]
        cmd += ["--uid", SANDBOX_UID, "--gid", SANDBOX_UID, "--hostname", "sandbox"]
        cmd += ["--die-with-parent", "--new-session", "--clearenv"]
        for name, value in env.items():
            cmd += ["--setenv", name, value]
        # bwrap mounts in order: the private /tmp first, so that an interpreter or a checkout
        # lying under the host's /tmp is bound on top of it rather than hidden by it.
        cmd += ["--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
        for path in map(Path, SYSTEM_DIRS):
            if path.is_symlink():
                cmd += ["--symlink", str(path.readlink()), str(path)]
            elif path.is_dir():
                cmd += ["--ro-bind", str(path), str(path)]
        # A virtualenv made with --copies holds its own interpreter binary, outside the prefix.
        own = () if exe.is_relative_to(prefix) else (str(exe),)
        for tree in (str(prefix), *own, str(PACKAGE_DIR), *self.read_only):
            cmd += ["--ro-bind", tree, tree]
        return [*cmd, "--chdir", "/tmp", "--", *inner]

    def exit_status(self, code: int) -> int:
        """A sandboxed process's exit status as ``subprocess`` reports one it started itself:
        bwrap passes a process killed by signal N on as status 128 + N."""
        if self.isolated and 128 < code < 128 + signal.NSIG:
            return -(code - 128)
        return code

    def require(self, what: str) -> str | None:
        """Check before any work that ``what`` can be verified: ``SandboxUnavailable`` (one
        line: what is missing, how to get it) when the OS sandbox cannot start; the warning to
        print on every run in process mode; None when isolated."""
        if not self.isolated:
            return process_mode_warning(what)
        cmd = self.command([sys.executable, "-S", "-c", "pass"], {})
        key = tuple(cmd)
        if key in _ready:
            return None
        try:
            probe = subprocess.run(
                cmd, capture_output=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"no OS sandbox: {cmd[0]} did not run ({exc})") from exc
        if probe.returncode != 0:
            lines = probe.stderr.decode("utf-8", "replace").strip().splitlines()
            why = lines[-1] if lines else f"exit status {probe.returncode}"
            raise SandboxUnavailable(
                f"no OS sandbox: {cmd[0]} cannot create its namespaces ({why}); it needs "
                "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or "
                f"root; or {CHOOSE_PROCESS}"
            )
        _ready[key] = None
        return None
