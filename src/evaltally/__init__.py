"""evaltally: plan-first LLM evaluation sweeps with an append-only SQLite ledger and exact resume.

The public API is what this module re-exports (pinned by tests/test_public_api.py); everything
else may move between releases.
"""

from __future__ import annotations

from evaltally.benchmarks.binding import load_config
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
