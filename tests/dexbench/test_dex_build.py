"""The instance builder: the shipped file rebuilt byte for byte, exact counts, PythonSaga from a
user's file, and the ``tally dex build`` command."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evaltally.benchmarks.dexbench.build import CRUXEVAL_FILE, HUMANEVAL_FILE, build
from evaltally.benchmarks.dexbench.cli import app
from evaltally.benchmarks.dexbench.instances import builtin_path, dumps, load_builtin
from testkit import REPO, SHARED, tally

BUILTIN_SHA256 = "78c148bcbe33b8a5bb5238a4996b862074d0e5a71ddc75b4b0a7d1748ecdf568"


def test_packaged_upstream_files_are_the_unmodified_upstream_files() -> None:
    for packaged, upstream in (
        (CRUXEVAL_FILE, SHARED / "data" / "cruxeval" / "cruxeval.jsonl"),
        (HUMANEVAL_FILE, SHARED / "data" / "humaneval" / "HumanEval.jsonl.gz"),
    ):
        if not upstream.exists():
            pytest.fail(f"{upstream} not found: ../shared must be beside the clone")
        assert packaged.read_bytes() == upstream.read_bytes()
    for name in ("LICENSE-cruxeval", "LICENSE-humaneval", "ATTRIBUTION.md"):
        assert (CRUXEVAL_FILE.parent / name).is_file()


def test_the_builder_reproduces_the_shipped_instances_byte_for_byte() -> None:
    result = build()
    assert dumps(result.instances).encode() == builtin_path().read_bytes()
    assert hashlib.sha256(builtin_path().read_bytes()).hexdigest() == BUILTIN_SHA256
    crux, human = result.counts["cruxeval"], result.counts["humaneval"]
    assert (crux.records, crux.control_flow, crux.runs, crux.kept) == (800, 594, 594, 298)
    assert (human.records, human.runs, human.kept) == (164, 117, 100)


def test_shipped_instances_have_stable_ids_and_exact_counts() -> None:
    instances = load_builtin()
    assert Counter(i.source for i in instances) == {"cruxeval": 298, "humaneval": 100}
    for i in instances:
        assert i.id == f"{i.source}/{i.source_id}"
        assert set(i.covered_lines) | set(i.uncovered_lines) == set(i.executable_lines)
        assert i.uncovered_lines and i.target_line in i.executable_lines
        assert set(i.target_lines) <= set(i.uncovered_lines)
        assert i.program.rstrip("\n").split("\n")[-1].startswith("unittest.TestCase().assert")
    crux_ids = [i.source_id for i in instances if i.source == "cruxeval"]
    assert crux_ids[:3] == ["sample_2", "sample_5", "sample_7"]


# A PythonSaga-like file (HumanEval's fields; source_id = 0-based line index). Written here:
# PythonSaga itself has no redistribution license and is never shipped or read by the tests.
SAGA = [
    {  # kept with its first assertion: the else branch stays uncovered
        "prompt": "def sign(x):\n    '''Sign of x.'''\n",
        "canonical_solution": "    if x >= 0:\n        return 1\n    else:\n        return -1\n",
        "test": "def check(candidate):\n    assert candidate(5) == 1\n"
        "    assert candidate(-2) == -1\n",
        "entry_point": "sign",
    },
    {  # no control flow: dropped
        "prompt": "def double(x):\n",
        "canonical_solution": "    return 2 * x\n",
        "test": "def check(candidate):\n    assert candidate(2) == 4\n",
        "entry_point": "double",
    },
    {  # the first assertion fails: dropped
        "prompt": "def one(x):\n",
        "canonical_solution": "    if x:\n        return 1\n    return 0\n",
        "test": "def check(candidate):\n    assert candidate(1) == 2\n",
        "entry_point": "one",
    },
    {  # fully covered by the first assertion; the second leaves a line: kept with index 1
        "prompt": "def clip(xs):\n",
        "canonical_solution": "    out = []\n    for x in xs:\n        if x > 3:\n"
        "            x = 3\n        out.append(x)\n    return out\n",
        "test": "def check(candidate):\n    assert candidate([5, 1]) == [3, 1]\n"
        "    assert candidate([1]) == [1]\n",
        "entry_point": "clip",
    },
    {  # removing its triple-quoted string value breaks the syntax (HumanEval/64 does this)
        "prompt": 'FIX = """\nnote\n"""\n\ndef g(x):\n',
        "canonical_solution": "    if x:\n        return 1\n    return 0\n",
        "test": "def check(candidate):\n    assert candidate(1) == 1\n",
        "entry_point": "g",
    },
]


def _small_upstream(tmp_path: Path) -> tuple[Path, Path]:
    crux = tmp_path / "crux.jsonl"
    crux.write_text("".join(CRUXEVAL_FILE.read_text().splitlines(keepends=True)[:12]))
    human = tmp_path / "human.jsonl"
    with gzip.open(HUMANEVAL_FILE, "rt") as fh:
        human.write_text("".join(fh.readlines()[:3]))
    return crux, human


def test_pythonsaga_instances_from_a_user_file(tmp_path: Path) -> None:
    crux, human = _small_upstream(tmp_path)
    saga = tmp_path / "basic185.jsonl"
    saga.write_text("\n".join(json.dumps(r) for r in SAGA[:2]) + "\n\n" + "\n".join(
        json.dumps(r) for r in SAGA[2:]) + "\n")  # fmt: skip
    out = tmp_path / "dex.jsonl"
    args = ["build", "-o", str(out), "--cruxeval", str(crux), "--humaneval", str(human)]
    result = CliRunner().invoke(app, [*args, "--pythonsaga", str(saga)])
    assert result.exit_code == 0, result.output
    assert "pythonsaga: 5 records -> 4 with control flow -> 2 run -> 2 instances" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    saga_rows = [r for r in rows if r["source"] == "pythonsaga"]
    assert [(r["id"], r["test_index"]) for r in saga_rows] == [
        ("pythonsaga/0", 0),
        ("pythonsaga/4", 1),  # line 4 of the file (0-based; line 2 is blank)
    ]
    sign = saga_rows[0]
    assert sign["input"] == "5" and sign["known_good_input"] == "-2"
    assert (sign["target_rule"], sign["target_line"], sign["uncovered_lines"]) == (
        "return",
        12,
        [12],
    )
    assert "'''" not in sign["program"]
    assert {r["source"] for r in rows} == {"cruxeval", "humaneval", "pythonsaga"}


def test_build_refuses_to_overwrite_unless_forced(tmp_path: Path) -> None:
    crux, human = _small_upstream(tmp_path)
    out = tmp_path / "dex.jsonl"
    out.write_text("precious\n")
    args = ["build", "-o", str(out), "--cruxeval", str(crux), "--humaneval", str(human)]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2
    assert f"{out}: already exists; pass --force to overwrite it" in refused.output
    assert out.read_text() == "precious\n"
    forced = CliRunner().invoke(app, [*args, "--force"])
    assert forced.exit_code == 0 and out.read_text().startswith('{"id": "cruxeval/')


def test_a_malformed_upstream_record_names_file_and_line(tmp_path: Path) -> None:
    crux, human = _small_upstream(tmp_path)
    saga = tmp_path / "saga.jsonl"
    saga.write_text(json.dumps(SAGA[0]) + "\n" + json.dumps({"prompt": "x"}) + "\n")
    args = ["build", "-o", str(tmp_path / "o.jsonl"), "--cruxeval", str(crux)]
    result = CliRunner().invoke(app, [*args, "--humaneval", str(human), "--pythonsaga", str(saga)])
    assert result.exit_code == 2
    assert f"{saga}:2: missing or non-string field(s) canonical_solution, test, entry_point" in (
        result.output
    )
    assert not (tmp_path / "o.jsonl").exists()


def test_tally_dex_is_mounted_and_readme_shows_its_commands() -> None:
    result = tally("dex", "build", "--help")
    assert result.returncode == 0, result.stderr
    for option in ("--out", "--pythonsaga", "--force"):
        assert option in result.stdout
    readme = (REPO / "README.md").read_text()
    assert "tally dex build -o dexbench.jsonl" in readme
    assert "tally dex build -o" in (REPO / "docs" / "dexbench.md").read_text()
