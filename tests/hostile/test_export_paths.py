"""`tally export -o` never writes over a run's own files, and never over any existing file
without --force; the refusal names the path and the ledger is left byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ledger_hostile_kit import error_lines, file_digest, offline_cte_sweep, run_tally


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two finished runs side by side: runs/t and runs/other."""
    where = tmp_path_factory.mktemp("export")
    for name in ("t", "other"):
        code, _, err = run_tally("run", str(offline_cte_sweep(where, name=name)))
        assert code == 0, err
    return where / "runs"


OWN_FILES = [
    "t/ledger.sqlite",
    "t/ledger.sqlite-wal",  # absent after a clean close; still the run's
    "t/config.toml",
    "t/.lock",
    "t/.config_dir",
    "other/ledger.sqlite",  # another run's ledger
]


@pytest.mark.parametrize("target", OWN_FILES)
def test_a_run_file_is_refused_even_with_force(runs: Path, target: str) -> None:
    out = runs / target
    existed = out.exists()
    ledgers = {p: file_digest(p) for p in runs.glob("*/ledger.sqlite")}

    code, _, err = run_tally("export", str(runs / "t"), "-o", str(out), "--force")

    assert code == 2, err
    (line,) = error_lines(err)
    assert f"refusing to write the export to {out}" in line
    assert {p: file_digest(p) for p in runs.glob("*/ledger.sqlite")} == ledgers
    assert out.exists() is existed


def test_a_link_to_the_ledger_is_refused(runs: Path, tmp_path: Path) -> None:
    ledger = runs / "t" / "ledger.sqlite"
    before = file_digest(ledger)
    symlink, hardlink = tmp_path / "export.jsonl", tmp_path / "copy.jsonl"
    symlink.symlink_to(ledger)
    os.link(ledger, hardlink)
    for out in (symlink, hardlink):
        code, _, err = run_tally("export", str(runs / "t"), "-o", str(out), "--force")
        assert code == 2 and f"refusing to write the export to {out}" in err, err
    assert file_digest(ledger) == before
    code, _, err = run_tally("verify", str(runs / "t"))
    assert code == 0, err


def test_an_existing_file_needs_force(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine.jsonl"
    out.write_text("my notes\n")

    code, _, err = run_tally("export", str(runs / "t"), "-o", str(out))
    assert code == 2, err
    (line,) = error_lines(err)
    assert f"{out} already exists; pass --force" in line
    assert out.read_text() == "my notes\n"

    code, stdout, err = run_tally("export", str(runs / "t"), "-o", str(out), "--force")
    assert code == 0, err
    assert "wrote 120 rows" in stdout and len(out.read_text().splitlines()) == 120


def test_a_new_file_inside_the_run_directory_is_fine(runs: Path) -> None:
    out = runs / "other" / "export.jsonl"
    code, _, err = run_tally("export", str(runs / "other"), "-o", str(out))
    assert code == 0, err
    assert len(out.read_text().splitlines()) == 120
