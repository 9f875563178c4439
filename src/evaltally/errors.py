"""The exception tree of evaltally. Every error a user can meet derives from one root.

    EvaltallyError                 root; carries a message that says what to fix
    ├── ConfigError                a sweep config: names the file, the key and the reason
    ├── DataError                  an item/scenario file: names the file, line/record and field
    ├── LedgerError                a run directory or ledger file is unusable
    │   ├── RunLockedError         another process drives the same run
    │   ├── PlanMismatchError      the config no longer matches the recorded plan
    │   ├── LedgerIntegrityError   `tally verify` found a violated invariant
    │   └── LedgerWriteError       the ledger could not record (disk full, I/O error): exit 3
    ├── ProviderError              a provider answered in a way the adapter cannot use
    ├── CredentialError            a key or credential variable is missing
    ├── BenchmarkError             a benchmark broke its contract or raised on one call
    ├── SandboxError               service code from a data file failed or exceeded its limits
    ├── ViewError                  `tally view` cannot serve (port taken, bad address)
    └── RunTerminated              SIGTERM stopped the run (treated like Ctrl-C): exit 130

Foreign exceptions (aiohttp, sqlite3, orjson, OSError) are translated at the module that meets
them, so callers only ever catch these.
"""

from __future__ import annotations


class EvaltallyError(Exception):
    """Root of every error evaltally raises on purpose."""

    exit_code = 2


class ConfigError(EvaltallyError):
    """A sweep config is invalid. The message names the file, the key and the reason."""

    def __init__(self, path: object, key: str, reason: str) -> None:
        self.path = str(path)
        self.key = key
        self.reason = reason
        where = f"{self.path}: {key}" if key else self.path
        super().__init__(f"{where}: {reason}")


class DataError(EvaltallyError):
    """An input data file is unreadable or malformed (names file, line or record, and field)."""


class CredentialError(EvaltallyError):
    """A credential the config refers to is missing. Never carries the credential itself."""


class LedgerError(EvaltallyError):
    """A run directory or its ledger cannot be used as asked."""


class RunLockedError(LedgerError):
    """Another process holds the run's lock."""


class PlanMismatchError(LedgerError):
    """The plan from the config differs from the plan recorded in the ledger."""


class LedgerIntegrityError(LedgerError):
    """A ledger invariant is violated (tampering, truncation, or a bug)."""


class LedgerWriteError(LedgerError):
    """A commit to the ledger failed (disk full, I/O error). Everything committed before is
    intact and the run stopped; once the cause is fixed, `tally resume RUN` continues it."""

    exit_code = 3


class ProviderError(EvaltallyError):
    """A provider response could not be interpreted."""


class BenchmarkError(EvaltallyError):
    """A benchmark's code broke the contract of benchmarks/base.py (names the benchmark and,
    where there is one, the call). Raised while running a call, it fails that call only."""


class SandboxError(EvaltallyError):
    """Untrusted service code failed, timed out or exceeded its limits in its sandbox."""


class ViewError(EvaltallyError):
    """`tally view` cannot start serving (the port is taken, the address is not local)."""


class RunTerminated(EvaltallyError):
    """The process was asked to stop (SIGTERM); in-flight attempts were closed as interrupted."""

    exit_code = 130
