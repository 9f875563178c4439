"""The commands docs/ctxgap.md shows run as shown, and its example table is what they print."""

from __future__ import annotations

import os
import re
import shlex
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
        ["ctxgap", "check"],
        ["ctxgap", "export-observer-inputs"],
        ["ctxgap", "score-labels"],
    ]
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
        "observer-inputs.jsonl",
        "report.json",
        "report.md",
    ]
    documented = re.findall(
        r"^\| (A\(U\)|A\(T_full\)|gap [^|]*) \| ([^|]+) \|", DOC.read_text(), re.M
    )
    assert len(documented) == 3
    printed = outputs[2]
    for label, cell in documented:
        assert re.search(
            re.escape(label.strip()) + r"\s*│\s*" + re.escape(cell.strip()), printed
        ), label
