"""Sweep config (TOML) -> validated, frozen objects.

Every error names the file, the key (dotted, with list indices) and the reason. Unknown keys
are errors, so a typo never silently falls back to a default. The key names are the contract
in DESIGN.md's "Config shape"; `docs/config.md` describes each one.

One module per job:

    records.py      the frozen records: SweepConfig, ModelConfig, Limits, Price, BatchSettings,
                    BenchmarkConfig
    load.py         load_config: the file and its `[run]` table
    section.py      typed reading of one TOML table (Section)
    models.py       the `[[models]]` entries, their `limits` and `price`
    provider.py     what a model's provider preset implies (URL, key variable, list price,
                    parameters, API version)
    batch.py        batch mode: settings and batch price
    benchmarks.py   the `[[benchmarks]]` entries
    budget.py       the spend-limit rule (`run.budget_usd`, `--budget`)
    checks.py       values touching credentials or the file system (URL, key variable, run name,
                    run directory)
    keys.py         read_api_keys: the API keys from the environment
    run_dir.py      a run directory's config copy: kept, read back, written for derived runs
    toml_text.py    TOML text written from plain data (a derived run's config)
"""

from __future__ import annotations

from evaltally.config.batch import batch_price
from evaltally.config.budget import check_budget
from evaltally.config.keys import read_api_keys
from evaltally.config.load import load_config
from evaltally.config.records import (
    BatchSettings,
    BenchmarkConfig,
    Limits,
    ModelConfig,
    Price,
    SweepConfig,
)

__all__ = [
    "BatchSettings",
    "BenchmarkConfig",
    "Limits",
    "ModelConfig",
    "Price",
    "SweepConfig",
    "batch_price",
    "check_budget",
    "load_config",
    "read_api_keys",
]
