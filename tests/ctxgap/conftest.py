"""Fixtures of the CTXGAP tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from ctxgap_kit import Rows, probe, view, write_rows


@pytest.fixture
def data_dir(tmp_path: Path) -> Callable[..., Path]:
    """`data_dir(views=..., probes=...)`: a data directory; defaults are one valid probe."""

    def make(views: Rows | None = None, probes: Rows | None = None) -> Path:
        d = tmp_path / "data"
        d.mkdir(exist_ok=True)
        write_rows(d / "views.jsonl", views if views is not None else [view("t1", "c1", "U")])
        write_rows(d / "probes.jsonl", probes if probes is not None else [probe("p1")])
        return d

    return make
