"""The commands docs/ctxgap.md shows run as shown (from a directory holding a copy of the
example config, as the repository does), and its example tables are what they print."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from testkit import REPO

DOC = REPO / "docs" / "ctxgap.md"


def doc_commands() -> list[list[str]]:
    blocks = re.findall(r"```sh\n(.*?)```", DOC.read_text(), re.S)
    lines = [line for block in blocks for line in block.splitlines() if line.startswith("tally ")]
    return [shlex.split(line)[1:] for line in lines]


def test_documented_commands_run_and_match_the_documented_numbers(tmp_path: Path) -> None:
    commands = doc_commands()
    assert [c[:2] for c in commands] == [
        ["run", "configs/ctxgap-example.toml"],
        ["report", "runs/ctxgap-example"],
        ["ctxgap", "check"],
        ["ctxgap", "export-observer-inputs"],
        ["ctxgap", "score-labels"],
    ]
    (tmp_path / "configs").mkdir()
    shutil.copy(REPO / "configs" / "ctxgap-example.toml", tmp_path / "configs")
    outputs = []
    for args in commands:
        result = subprocess.run(
            [sys.executable, "-m", "evaltally", *args],
            cwd=tmp_path,
            env={**os.environ, "COLUMNS": "200"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, (args, result.stderr)
        outputs.append(result.stdout)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "configs",
        "observer-inputs.jsonl",
        "report.json",
        "report.md",
        "runs",
    ]
    text = DOC.read_text()
    documented = re.findall(r"^\| (A\(U\)|A\(T_full\)|gap [^|]*) \| ([^|]+) \|", text, re.M)
    assert len(documented) == 3
    labels = outputs[4]
    for label, cell in documented:
        assert re.search(re.escape(label.strip()) + r"\s*│\s*" + re.escape(cell.strip()), labels)

    report = outputs[1]
    run_rows = re.findall(r"^\| (reference|verbatim|dont_know) \| (.+) \|$", text, re.M)
    assert [observer for observer, _ in run_rows] == ["reference", "verbatim", "dont_know"]
    for observer, cells in run_rows:
        mine = report.split(f"(observer {observer}, judge exact_match)")
        a_u, a_t, a_public, gap = (c.strip() for c in cells.split("|"))
        by_view, gap_table = mine[1], mine[2]
        for view, cell in (("U", a_u), ("T_full", a_t), ("public", a_public)):
            row = rf"│ {view}\s*│[^\n]*│\s*{re.escape(cell)} │"
            assert re.search(row, by_view), (observer, view)
        assert re.search(r"gap A\(T_full\) - A\(U\), pp\s*│\s*" + re.escape(gap), gap_table)
