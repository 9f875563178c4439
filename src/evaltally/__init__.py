"""evaltally: plan-first LLM evaluation sweeps with an append-only SQLite ledger and exact resume.

The public API is what this module re-exports (pinned by tests/test_public_api.py); everything
else may move between releases.
"""

from __future__ import annotations

from pathlib import Path

from evaltally.config import SweepConfig
from evaltally.errors import (
    ConfigError,
    CredentialError,
    DataError,
    EvaltallyError,
    LedgerError,
    LedgerIntegrityError,
    PlanMismatchError,
    ProviderError,
    RunLockedError,
    SandboxError,
)
from evaltally.records import Completion, PlannedCall, Status, Usage

__version__ = "0.1.0"


def load_config(
    path: Path, *, base_dir: Path | None = None, text: str | None = None
) -> SweepConfig:
    """Read a sweep config and bind it to its benchmark kinds (benchmarks/binding.py): every
    error a config can hold, before anything runs. Importing evaltally loads no benchmark; this
    loads the binding step when first called."""
    from evaltally.benchmarks.binding import load_config as load_and_bind

    return load_and_bind(path, base_dir=base_dir, text=text)


__all__ = [
    "Completion",
    "ConfigError",
    "CredentialError",
    "DataError",
    "EvaltallyError",
    "LedgerError",
    "LedgerIntegrityError",
    "PlanMismatchError",
    "PlannedCall",
    "ProviderError",
    "RunLockedError",
    "SandboxError",
    "Status",
    "SweepConfig",
    "Usage",
    "__version__",
    "load_config",
]
