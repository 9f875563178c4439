"""Scoring verdicts from a labels file: strict lines, the whole plan as denominator."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ctxgap_kit import probe, view, write_rows

from evaltally.benchmarks.ctxgap.data import example_dir, load_dataset
from evaltally.benchmarks.ctxgap.labels import read_labels, units_from_labels
from evaltally.benchmarks.ctxgap.stats import Options, analyze
from evaltally.errors import DataError


@pytest.fixture
def small(data_dir: Callable[..., Path]) -> Path:
    views = [view("t1", "c1", "U"), view("t1", "c1", "T"), view("t1", "c2", "U")]
    probes = [
        probe("p1"),
        probe("p2", invalid="ambiguous"),
        probe("p3", invalid_views={"T": "redacted"}),
        probe("p4", checkpoint="c2"),
    ]
    return data_dir(views=views, probes=probes)


def label(pid: str, view_name: str, verdict: Any, **extra: Any) -> dict[str, Any]:
    return {"probe_id": pid, "view": view_name, "verdict": verdict, **extra}


def test_unlabeled_planned_units_are_missing_and_bindings_split(small: Path) -> None:
    ds = load_dataset(small)
    path = write_rows(
        small / "labels.jsonl",
        [
            label("p1", "U", 1),
            label("p1", "T", 0.5, note="close"),
            label("p1", "U", 0, observer="m2"),
        ],
    )
    units = units_from_labels(path, ds)
    # Planned: p1 in U and T, p3 in U, p4 in U (c2 has no T): 4 per binding.
    assert [(u.observer_model, u.judge_model) for u in units[::4]] == [
        ("-", "labels"),
        ("m2", "labels"),
    ]
    first = {(u.probe_id, u.view): (u.outcome, u.score) for u in units[:4]}
    assert first == {
        ("p1", "U"): ("scored", 1.0),
        ("p1", "T"): ("scored", 0.5),
        ("p3", "U"): ("missing", 0.0),
        ("p4", "U"): ("missing", 0.0),
    }


LABEL_ERRORS: list[tuple[dict[str, Any], str]] = [
    (label("p9", "U", 1), "probe_id: no probe 'p9' in the data"),
    (
        label("p2", "U", 1),
        "probe_id: probe 'p2' is marked invalid (ambiguous); its labels cannot be scored",
    ),
    (label("p3", "T", 1), "view: probe 'p3' is invalid in view 'T' (redacted)"),
    (label("p4", "T", 1), "view: probe 'p4' (task 't1', checkpoint 'c2') has no view 'T'"),
    (label("p1", "U", 0.25), "verdict: must be 0, 0.5 or 1, got 0.25"),
    (label("p1", "U", "1"), "verdict: must be 0, 0.5 or 1, got '1'"),
    (label("p1", "U", False), "verdict: must be 0, 0.5 or 1, got False"),
    (label("p1", "T", 1, score=1), "score: unknown field"),
    ({"probe_id": "p1", "view": "T"}, "verdict: missing"),
    (label("p1", "U", 1), "view: probe 'p1' in view 'U' is already labeled on line 1"),
    (label("p1", "T", 1, observer=""), "observer: must be a non-empty string"),
    (label("p1", "T", 1, note=5), "note: must be a string"),
]


@pytest.mark.parametrize(("line", "message"), LABEL_ERRORS)
def test_label_errors_name_file_line_and_field(
    small: Path, line: dict[str, Any], message: str
) -> None:
    path = write_rows(small / "labels.jsonl", [label("p1", "U", 1), line])
    with pytest.raises(DataError) as err:
        read_labels(path, load_dataset(small))
    assert f"labels.jsonl:2: {message}" in str(err.value)


def test_an_empty_labels_file_is_refused(small: Path) -> None:
    path = small / "labels.jsonl"
    path.write_text("# nothing yet\n")
    with pytest.raises(DataError, match="no labels"):
        read_labels(path, load_dataset(small))


def test_example_set_statistics() -> None:
    """The numbers quoted in docs/ctxgap.md and the closing report."""
    ds = load_dataset("example")
    units = units_from_labels(example_dir() / "labels.jsonl", ds)
    assert len(units) == 98
    r = analyze(units, Options(views=ds.view_names, variants=("U", "public", "T_full")))
    b = r["bindings"][0]
    gap = b["gap"]
    assert gap["n_probes"] == 29 and gap["n_tasks"] == 3
    assert round(gap["accuracy"]["U"]["value"], 4) == 0.3638
    assert round(gap["accuracy"]["T_full"]["value"], 4) == 0.9099
    diff = gap["differences"][0]
    assert (round(diff["value"], 4), round(diff["ci_low"], 4), round(diff["ci_high"], 4)) == (
        0.5461,
        0.4454,
        0.6352,
    )
    assert round(diff["pooled_difference"], 4) == 0.5522
    assert round(gap["pooled"]["U"]["value"], 4) == 0.3668
    assert gap["outcomes"]["U"]["missing"] == 1 and gap["coverage"]["T_full"] == 1.0
    public_minus_u = b["variants"]["differences"][0]
    assert (public_minus_u["from"], round(public_minus_u["value"], 4)) == ("U", 0.1612)
