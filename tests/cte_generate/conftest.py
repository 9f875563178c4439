"""Fixtures for the generator tests: the shipped built-in set, parsed once per session."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from evaltally.benchmarks.cte.generate import builtin_path


@pytest.fixture(scope="session")
def builtin_records() -> list[dict[str, Any]]:
    with gzip.open(builtin_path(), "rt", encoding="ascii") as fh:
        return [json.loads(line) for line in fh]
