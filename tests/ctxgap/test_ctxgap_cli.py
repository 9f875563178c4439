"""`tally ctxgap ...`: exports and reports are written once and never overwritten; bad input is
one line naming the file, line and field, exit 2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from ctxgap_kit import probe, view, write_rows, write_sweep
from typer.testing import CliRunner

from evaltally.benchmarks.ctxgap.cli import app
from testkit import REPO, tally


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_tally_mounts_ctxgap() -> None:
    result = tally("ctxgap", "check", "example")
    assert result.returncode == 0, result.stderr
    assert (
        "3 tasks, 7 checkpoints, views U, T_full, public, actor; 31 probes; 98 planned"
        in result.stdout
    )
    assert "invalid: t3-final-warning in view public: the log exporter redacted" in result.stdout


def test_export_observer_inputs_writes_once_and_lists_invalid_probes(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "observer-inputs.jsonl"
    code, output = invoke("export-observer-inputs", "example", "-o", str(target))
    assert code == 0, output
    assert f"wrote 98 observer inputs to {target}" in output
    assert "left out (invalid): t1-cp2-latency: contested reference" in output
    rows = [orjson.loads(line) for line in target.read_bytes().splitlines()]
    assert len(rows) == 98 and rows[0]["probe_id"] == "t1-cp1-limit"
    before = target.read_bytes()
    code, output = invoke("export-observer-inputs", "example", "-o", str(target))
    assert code == 2
    assert f"error: {target}: already exists; outputs are never overwritten" in output
    assert target.read_bytes() == before
    assert [p.name for p in target.parent.iterdir()] == ["observer-inputs.jsonl"]


def test_score_labels_writes_json_and_markdown_and_refuses_to_overwrite(tmp_path: Path) -> None:
    report, md = tmp_path / "report.json", tmp_path / "report.md"
    args = ["score-labels", "example", "--labels", "example", "--resamples", "300"]
    code, output = invoke(*args, "-o", str(report), "--markdown", str(md), "--variants", "U,public")
    assert code == 0, output
    assert "Information gap (observer -, judge labels)" in output
    doc = orjson.loads(report.read_bytes())
    assert doc["kind"] == "ctxgap" and doc["bootstrap"]["resamples"] == 300
    assert len(doc["source"]["data_sha256"]) == 64 and len(doc["source"]["labels_sha256"]) == 64
    assert [i["probe_id"] for i in doc["invalid_probes"]] == [
        "t1-cp2-latency", "t2-final-duration", "t3-final-warning"
    ]  # fmt: skip
    assert doc["bindings"][0]["variants"]["views"] == ["U", "public"]
    text = md.read_text()
    assert text.startswith("# CTXGAP report") and "is not the gap" in text
    assert "### By category" in text
    md.unlink()  # only the JSON is left: the command must still refuse, before any work
    code, output = invoke(*args, "-o", str(report), "--markdown", str(md))
    assert code == 2 and "already exists" in output and not md.exists()


def test_option_errors_exit_2(tmp_path: Path) -> None:
    base = ["score-labels", "example", "--labels", "example", "--resamples", "0"]
    assert invoke(*base, "--gap", "U")[1].startswith("error: --gap: name exactly two views")
    code, output = invoke(*base, "--gap", "U,nope")
    assert code == 2 and "gap: no view 'nope'" in output
    code, output = invoke(*base, "--variants", "U,,T_full")
    assert code == 2 and "--variants: give view names separated by commas" in output
    code, output = invoke("score-labels", "example", "--labels", str(tmp_path / "none.jsonl"))
    assert code == 2 and "cannot read the labels file" in output


def test_data_errors_name_file_line_and_field(data_dir: Callable[..., Path]) -> None:
    d = data_dir(probes=[probe("p1", importance=7)])
    code, output = invoke("check", str(d))
    assert code == 2
    assert output.strip() == (
        f"error: {d / 'probes.jsonl'}:1: importance: must be an integer from 0 to 3, got 7"
    )


def test_untrusted_names_print_as_text(data_dir: Callable[..., Path], tmp_path: Path) -> None:
    name = "[bold red]U[/bold red]"
    d = data_dir(views=[view("t1", "c1", name), view("t1", "c1", "T")], probes=[probe("p1")])
    labels = write_rows(tmp_path / "labels.jsonl", [{"probe_id": "p1", "view": name, "verdict": 1}])
    code, output = invoke("score-labels", str(d), "--labels", str(labels), "--resamples", "0")
    assert code == 0, output
    assert name in output


def test_export_observer_inputs_from_a_config_holds_the_units_it_plans(tmp_path: Path) -> None:
    config = write_sweep(tmp_path, 'data = "example"\nviews = ["U", "T_full"]')
    target = tmp_path / "inputs.jsonl"
    code, output = invoke("export-observer-inputs", "--config", str(config), "-o", str(target))
    assert code == 0, output
    rows = [orjson.loads(line) for line in target.read_bytes().splitlines()]
    assert len(rows) == 2 * 29 and {r["view"] for r in rows} == {"U", "T_full"}
    everything = tmp_path / "all.jsonl"
    assert invoke("export-observer-inputs", "example", "-o", str(everything))[0] == 0
    full = [orjson.loads(line) for line in everything.read_bytes().splitlines()]
    assert rows == [r for r in full if r["view"] in ("U", "T_full")]
    code, output = invoke("export-observer-inputs", "--config", str(config), "-o", str(target))
    assert code == 2 and "already exists" in output


def test_export_observer_inputs_needs_exactly_one_source(tmp_path: Path) -> None:
    config = write_sweep(tmp_path)
    out = str(tmp_path / "x.jsonl")
    code, output = invoke("export-observer-inputs", "-o", out)
    assert code == 2 and "give one of: a data directory, --config CONFIG or --run RUN" in output
    code, output = invoke("export-observer-inputs", "example", "--config", str(config), "-o", out)
    assert code == 2 and "(2 given)" in output
    code, output = invoke("export-observer-inputs", "--config", str(config), "--benchmark", "b2",
                          "-o", out)  # fmt: skip
    assert code == 2 and "no ctxgap benchmark is named 'b2' (ctxgap benchmarks: ctxgap)" in output
    two = config.read_text() + config.read_text().split("[[benchmarks]]")[1].replace(
        'kind = "ctxgap"', '[[benchmarks]]\nkind = "ctxgap"\nname = "b2"', 1
    )
    config.write_text(two)
    code, output = invoke("export-observer-inputs", "--config", str(config), "-o", out)
    assert code == 2 and "several ctxgap benchmarks: name one with --benchmark" in output
    code, output = invoke("export-observer-inputs", "--config", str(config), "--benchmark", "b2",
                          "-o", out)  # fmt: skip
    assert code == 0, output
    out = str(tmp_path / "y.jsonl")
    code, output = invoke("export-observer-inputs", "--run", str(tmp_path / "nope"), "-o", out)
    assert code == 2 and "not a run directory" in output


@pytest.mark.parametrize(
    ("config", "calls"), [("ctxgap-example.toml", 588), ("ctxgap-rehearsal.toml", 196)]
)
def test_shipped_configs_plan(config: str, calls: int) -> None:
    result = tally("plan", str(REPO / "configs" / config))
    assert result.returncode == 0, result.stderr
    assert f"total planned calls: {calls:,} (nothing was sent)" in result.stdout
