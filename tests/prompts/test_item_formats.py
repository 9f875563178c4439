"""CSV, Parquet and JSONL items files of the same items plan the same calls with the same ids
(a table row is read into exactly the JSONL item it stands for), and bad tables get one line
naming the file, row and column."""

from __future__ import annotations

import csv
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evaltally import load_config
from evaltally.benchmarks.binding import load_benchmarks
from evaltally.errors import EvaltallyError
from evaltally.plan.sweep import iter_plan

ROWS = [
    ("q1", "What is 2 + 2?", "4", ["3", "4"], "easy"),
    ("q2", "Name a primary colour.", "red", ["red", "grey"], "easy"),
    ("q3", "Capital of Peru?", "Lima", ["Lima", "Quito"], "hard"),
]
MAPPING = (
    'id_field = "key"\nprompt_field = "question"\ntarget_field = "answer"\n'
    'choices_field = "options"\nmeta_fields = ["level"]\n'
)


def _config(tmp_path: Path, path: str, mapping: str = "") -> Path:
    config = tmp_path / f"{path}.toml"
    config.write_text(
        '[run]\nname = "f"\n[[models]]\nkey = "o"\nprovider = "baseline"\nmodel = "oracle"\n'
        f'[[benchmarks]]\nkind = "prompts"\npath = "{path}"\nscorer = "choice"\nsamples = 2\n'
        + mapping
    )
    return config


def _plan(config: Path) -> list[tuple[str, str, str, int]]:
    cfg = load_config(config)
    benches = load_benchmarks(cfg)
    calls = list(iter_plan(cfg, benches))
    return [
        (c.call_id, c.item_id, orjson.dumps(benches[c.benchmark].render(c, [])).decode(), c.sample)
        for c in calls
    ]


def _write_jsonl(path: Path) -> None:
    with path.open("w") as fh:
        for key, q, a, opts, level in ROWS:
            item = {
                "id": key,
                "messages": [{"role": "user", "content": q}],
                "target": a,
                "choices": opts,
                "meta": {"level": level},
            }
            fh.write(orjson.dumps(item).decode() + "\n")


def test_csv_parquet_and_jsonl_give_identical_plans(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "items.jsonl")
    with (tmp_path / "items.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["key", "question", "answer", "options", "level", "unused"])
        for key, q, a, opts, level in ROWS:
            writer.writerow([key, q, a, orjson.dumps(opts).decode(), level, "x"])
    table = pa.table(
        {
            "key": [r[0] for r in ROWS],
            "question": [r[1] for r in ROWS],
            "answer": [r[2] for r in ROWS],
            "options": [r[3] for r in ROWS],
            "level": [r[4] for r in ROWS],
        }
    )
    pq.write_table(table, tmp_path / "items.parquet")

    jsonl = _plan(_config(tmp_path, "items.jsonl"))
    assert len(jsonl) == 6 and "A. 3\\nB. 4" in jsonl[0][2]
    assert _plan(_config(tmp_path, "items.csv", MAPPING)) == jsonl
    assert _plan(_config(tmp_path, "items.parquet", MAPPING)) == jsonl


def test_a_dataset_built_on_disk_plans_like_its_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `datasets` dataset loads through `load_dataset`, as a hub one does; its rows read
    through the field mapping give the JSONL plan, and the report's data source names it."""
    import datasets

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _write_jsonl(tmp_path / "items.jsonl")
    rows = {
        "key": [r[0] for r in ROWS],
        "question": [r[1] for r in ROWS],
        "answer": [r[2] for r in ROWS],
        "options": [r[3] for r in ROWS],
        "level": [r[4] for r in ROWS],
    }
    (tmp_path / "qa" / "data").mkdir(parents=True)
    datasets.Dataset.from_dict(rows).to_json(str(tmp_path / "qa" / "data" / "test.jsonl"))
    config = tmp_path / "hf.toml"
    config.write_text(
        _config(tmp_path, "items.jsonl")
        .read_text()
        .replace('path = "items.jsonl"', 'dataset = "qa"\nsplit = "test"')
        + MAPPING
    )
    assert _plan(config) == _plan(_config(tmp_path, "items.jsonl"))
    (source,) = next(iter(load_benchmarks(load_config(config)).values())).data_sources()
    assert source.path.startswith("dataset ") and source.path.endswith("/test")


def test_a_hub_dataset_without_a_revision_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "hub.toml"
    config.write_text(
        _config(tmp_path, "x.jsonl")
        .read_text()
        .replace('path = "x.jsonl"', 'dataset = "someone/qa"')
    )
    with pytest.raises(EvaltallyError, match="needs `revision`"):
        load_benchmarks(load_config(config))


def test_a_missing_column_and_a_bad_choices_cell_are_named(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("id,question\nq1,hi\n")
    with pytest.raises(EvaltallyError, match=r"a\.csv: no column 'prompt'"):
        load_benchmarks(load_config(_config(tmp_path, "a.csv")))
    (tmp_path / "b.csv").write_text('id,prompt,target,choices\nq1,hi,A,"[not json"\n')
    with pytest.raises(EvaltallyError, match=r"b\.csv:row 1: column 'choices'"):
        load_benchmarks(load_config(_config(tmp_path, "b.csv")))


def test_a_scorer_without_any_target_is_refused(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_text("id,prompt,answer\nq1,hi,A\n")
    with pytest.raises(EvaltallyError, match=r"no item has a 'target'.*target_field"):
        load_benchmarks(load_config(_config(tmp_path, "c.csv")))
