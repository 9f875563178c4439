"""What observers see: every field of every exported row is rebuilt from the question and the
view alone, and no reference, importance, category or verdict can be found in it. The checker
is shown to catch planted leaks, so a passing run means something."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from ctxgap_kit import keys, leaks

from evaltally.benchmarks.ctxgap.chain import observer_rows
from evaltally.benchmarks.ctxgap.data import Dataset, Probe, example_dir, load_dataset
from evaltally.benchmarks.ctxgap.labels import read_labels


def test_every_exported_field_of_every_row_is_clean() -> None:
    ds = load_dataset("example")
    rows = list(observer_rows(ds))
    assert len(rows) == len(list(ds.planned())) == 98
    for row in rows:
        assert leaks(row, ds) == [], row["probe_id"]
    labels = read_labels(example_dir() / "labels.jsonl", ds)
    assert len(labels) == 96
    # Verdicts are numbers; what matters is that no verdict-bearing key is exported.
    assert not any(keys(r) & {"verdict", "score", "label"} for r in rows)


def test_no_reference_sits_inside_its_own_question() -> None:
    for p in load_dataset("example").probes:
        assert p.reference not in p.question


def _plant(row: dict[str, Any], ds: Dataset, how: str) -> dict[str, Any]:
    probe = next(p for p in ds.probes if p.probe_id == row["probe_id"])
    row = copy.deepcopy(row)
    if how == "message":
        row["messages"][1]["content"] += f"\nHint: {probe.reference}"
    elif how == "system":
        row["messages"][0]["content"] += f" Importance: {probe.importance}."
    elif how == "question":
        row["question"] += f" ({probe.reference})"
    elif how == "extra_message":
        row["messages"].append({"role": "assistant", "content": "VERDICT: 1"})
    else:
        row[how] = getattr(probe, how, 1)
    return row


@pytest.mark.parametrize(
    "how", ["message", "system", "question", "extra_message", "reference", "importance", "category"]
)
def test_the_checker_catches_a_planted_leak(how: str) -> None:
    ds = load_dataset("example")
    row = next(observer_rows(ds))
    assert leaks(row, ds) == []
    problems = leaks(_plant(row, ds, how), ds)
    assert problems != []
    if how == "message":
        assert any(p.startswith("secret text") for p in problems)


def test_secrets_do_not_flow_into_the_export() -> None:
    """Changing every reference, importance, category and atom changes no exported byte."""
    ds = load_dataset("example")

    def scrambled(p: Probe) -> Probe:
        return dataclasses.replace(
            p, reference="SCRAMBLED", importance=3 - p.importance, category="x", atom_id="y"
        )

    other = Dataset(ds.source, ds.views, tuple(scrambled(p) for p in ds.probes))
    assert list(observer_rows(other)) == list(observer_rows(ds))
