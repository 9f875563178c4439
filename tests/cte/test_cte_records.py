"""Strict scenario reading: every error names file, line, item_id and field."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from evaltally.benchmarks.cte.records import (
    SCORED_CALLS,
    Scenario,
    is_error,
    json_equal,
    load_scenarios,
)
from evaltally.errors import DataError

CF = "trace_counterfactual"


def first_records(official_path: Path, n: int) -> list[dict[str, Any]]:
    with gzip.open(official_path, "rt") as fh:
        return [json.loads(next(fh)) for _ in range(n)]


def write(tmp_path: Path, records: list[Any], name: str = "s.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in records))
    return p


def test_official_file_loads(official: list[Scenario]) -> None:
    assert len(official) == 255
    assert all(len(s.scored) == SCORED_CALLS for s in official)
    # state interventions recover the unedited source of their domain from an edit record
    state = [s for s in official if not s.intervention.is_source_edit]
    assert len(state) == 45 and all(s.shown_source.startswith("from math") for s in state)


def test_json_equal_rules() -> None:
    assert json_equal({"a": 1, "b": [1, 2]}, {"b": [1, 2.0], "a": 1.0})
    assert not json_equal({"a": True}, {"a": 1})
    assert not json_equal(0, False)
    assert not json_equal({"a": 1}, {"a": 1, "b": None})
    assert not json_equal("1", 1)
    assert is_error({"error": {"code": "X"}}) and not is_error({"ok": True}) and not is_error(None)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r.pop("final_state_cf"), "final_state_cf"),
        (lambda r: r.update(prefix_len="5"), "prefix_len"),
        (lambda r: r.update(prefix_len=True), "prefix_len"),
        (lambda r: r.update(trace_prefix="[{'op': 'x',"), "trace_prefix"),
        (lambda r: r["trace_original"][3].pop("args"), "trace_original[3].args"),
        (lambda r: r[CF][7].update(response=[1]), f"{CF}[7].response"),
        (lambda r: r["intervention"].pop("col_offset"), "intervention.col_offset"),
        (lambda r: r["intervention"].update(kind="magic"), "intervention.kind"),
        (lambda r: r.update({CF: r[CF][:10]}), CF),
        (lambda r: r.update(prefix_len=r["prefix_len"] + 1), "prefix_len"),
    ],
)  # fmt: skip
def test_strict_errors_name_file_line_item_field(
    official_path: Path, tmp_path: Path, mutate: Any, field: str
) -> None:
    recs = first_records(official_path, 3)
    mutate(recs[1])
    p = write(tmp_path, recs)
    with pytest.raises(DataError) as err:
        load_scenarios(p)
    msg = str(err.value)
    assert f"{p}:2:" in msg
    assert f"item {recs[1]['item_id']}" in msg
    assert f"field {field}:" in msg


def test_python_literal_traces_are_parsed_safely(official_path: Path, tmp_path: Path) -> None:
    recs = first_records(official_path, 2)
    for key in ("trace_prefix", "trace_original", "trace_counterfactual"):
        recs[0][key] = repr(recs[0][key])  # single quotes, True/False/None
    p = write(tmp_path, recs)
    a, _ = load_scenarios(p)
    assert a.prefix[0].response == json.loads(
        json.dumps(first_records(official_path, 1)[0]["trace_prefix"][0]["response"])
    )
    recs[0]["trace_prefix"] = "__import__('os').system('true')"
    with pytest.raises(DataError, match="trace_prefix"):
        load_scenarios(write(tmp_path, recs))


def test_other_file_errors(official_path: Path, tmp_path: Path) -> None:
    recs = first_records(official_path, 2)
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps(recs[0]) + "\n{not json\n")
    with pytest.raises(DataError, match=r"bad\.jsonl:2: not valid JSON"):
        load_scenarios(p)
    with pytest.raises(DataError, match="duplicate of line 1"):
        load_scenarios(write(tmp_path, [recs[0], recs[0]]))
    with pytest.raises(DataError, match="no such file"):
        load_scenarios(tmp_path / "missing.jsonl")
    with pytest.raises(DataError, match="no scenario"):
        load_scenarios(write(tmp_path, []))
    gz = tmp_path / "s.jsonl.gz"
    gz.write_bytes(gzip.compress((json.dumps(recs[1]) + "\n").encode()))
    assert [s.item_id for s in load_scenarios(gz)] == [recs[1]["item_id"]]
