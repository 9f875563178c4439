"""DexBench as a benchmark kind: typed options refused with the file and key, the plan (one call
per instance x task x sample, ids stable and pinned), rendering, parsing by task, the
verification job only for backward answers, and the export's oracle fields."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from evaltally.benchmarks.base import StepAnswer
from evaltally.benchmarks.binding import load_benchmarks
from evaltally.benchmarks.dexbench.benchmark import DexBenchmark
from evaltally.benchmarks.dexbench.instances import builtin_path
from evaltally.benchmarks.registry import get_kind
from evaltally.config import load_config
from evaltally.errors import ConfigError
from evaltally.plan import iter_plan
from evaltally.records import PlannedCall, Status
from testkit import tally

HEAD = """
[run]
name = "dex"

[[models]]
key = "oracle"
provider = "baseline"
model = "oracle"

[[benchmarks]]
kind = "dexbench"
"""


def _plan(tmp_path: Path, options: str) -> list[PlannedCall]:
    path = tmp_path / "dex.toml"
    path.write_text(HEAD + options)
    config = load_config(path)
    return list(iter_plan(config, load_benchmarks(config)))


def _bench(tmp_path: Path, options: str) -> DexBenchmark:
    path = tmp_path / "dex.toml"
    path.write_text(HEAD + options)
    bench = load_benchmarks(load_config(path))["dexbench"]
    assert isinstance(bench, DexBenchmark)
    return bench


def test_the_kind_is_registered_with_its_cli_as_tally_dex() -> None:
    kind = get_kind("dexbench")
    assert kind.mount_name == "dex" and kind.title == "DexBench"
    assert kind.benchmark_class() is DexBenchmark


def test_samples_give_one_planned_call_each_with_stable_ids(tmp_path: Path) -> None:
    calls = _plan(tmp_path, "samples = 5\nlimit = 2\n")
    assert len(calls) == 2 * 2 * 2 * 5  # sources x instances x tasks x samples
    assert len({c.call_id for c in calls}) == len({c.chain_id for c in calls}) == len(calls)
    assert calls == _plan(tmp_path, "samples = 5\nlimit = 2\n")
    first = calls[0]
    assert (first.item_id, first.protocol, first.sample) == ("cruxeval/sample_2", "forward", 0)
    assert first.spec == {"prompt_version": "dexbench-v2"}
    assert calls[5].spec == {"prompt_version": "dexbench-v2", "backward_mode": "mutate"}

    def digest(calls: list[PlannedCall]) -> tuple[str, str]:
        text = "".join(f"{c.call_id} {c.chain_id}\n" for c in calls)
        return calls[0].call_id, hashlib.sha256(text.encode()).hexdigest()[:16]

    # Recorded when the kind was added: a run planned then resumes with its wording named
    # (`prompt_version = "dexbench-v1"`) and gets exactly its ids; the version is part of each
    # call's spec, so dexbench-v2 plans new ids by design.
    old = _plan(tmp_path, 'samples = 5\nlimit = 2\nprompt_version = "dexbench-v1"\n')
    assert digest(old) == ("53a34824ba57e20a08f39126", "bbc9fa9924d6ebb1")
    assert digest(calls)[1] != "bbc9fa9924d6ebb1"


def test_the_full_builtin_plan_counts(tmp_path: Path) -> None:
    calls = _plan(tmp_path, "samples = 5\n")
    assert len(calls) == 398 * 2 * 5
    only = _plan(tmp_path, 'sources = ["humaneval"]\ntasks = ["backward"]\nlimit = 7\n')
    assert len(only) == 7 and {c.protocol for c in only} == {"backward"}
    assert all(c.item_id.startswith("humaneval/") for c in only)


def test_the_generate_mode_plans_new_ids_and_leaves_the_input_out(tmp_path: Path) -> None:
    mutate = _bench(tmp_path, 'limit = 1\ntasks = ["backward"]\n')
    generate = _bench(tmp_path, 'limit = 1\ntasks = ["backward"]\nbackward_mode = "generate"\n')
    [m_call, _] = _plan(tmp_path, 'limit = 1\ntasks = ["backward"]\n')
    [g_call, _] = _plan(tmp_path, 'limit = 1\ntasks = ["backward"]\nbackward_mode = "generate"\n')
    assert m_call.call_id != g_call.call_id
    instance = mutate.instances[m_call.item_id]
    shown = mutate.render(m_call, [])[-1]["content"]
    hidden = generate.render(g_call, [])[-1]["content"]
    assert f"Current arguments of `f` (last line): {instance.input}" in shown
    assert "Current arguments" not in hidden and "Give arguments for `f`" in hidden


def test_parse_verification_and_export_fields_follow_the_task(tmp_path: Path) -> None:
    bench = _bench(tmp_path, 'limit = 1\nsources = ["humaneval"]\n')
    forward, backward = _plan(tmp_path, 'limit = 1\nsources = ["humaneval"]\n')
    instance = bench.instances[forward.item_id]
    parsed = bench.parse(forward, '<answer>{"executed_lines": [3, 1]}</answer>')
    assert parsed.ok and parsed.value == {"executed_lines": [1, 3]} and parsed.path == "json"
    assert bench.parse(backward, "<answer>'a', 2</answer>").value == {"input": "'a', 2"}
    assert bench.parse(forward, "lines 1 and 3").error == (
        "no_answer_block: no <answer>...</answer> in the answer"
    )
    ok = StepAnswer(0, Status.OK, "", {"executed_lines": [1]})
    assert bench.verification(forward, ok) is None
    job = bench.verification(backward, StepAnswer(0, Status.OK, "", {"input": "'a', 2"}))
    assert job is not None and job.function == "evaltally.benchmarks.dexbench.verify:check"
    args: Any = job.args
    assert args["answer"] == "'a', 2" and args["target_lines"] == list(instance.target_lines)
    assert bench.export_fields(forward) == {
        "task": "forward",
        "source": "humaneval",
        "source_id": instance.source_id,
        "covered_lines": list(instance.covered_lines),
    }
    fields = bench.export_fields(backward)
    assert fields["target_line"] == instance.target_line and fields["backward_mode"] == "mutate"
    assert bench.data_sources()[0].sha256 == hashlib.sha256(builtin_path().read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ('tasks = ["sideways"]\n', "tasks: unknown value 'sideways'; valid: forward, backward"),
        ('tasks = ["forward", "forward"]\n', "tasks: lists a value twice"),
        ('backward_mode = "guess"\n', "backward_mode: must be one of: mutate, generate"),
        ('sources = ["mbpp"]\n', "sources: unknown value 'mbpp'"),
        ("limit = 0\n", "limit: must be > 0, got 0"),
        ("lmit = 3\n", "lmit: unknown key; valid keys here: backward_mode, data, "),
        ('sources = ["pythonsaga"]\n', "sources: no instance left (sources in "),
        ('data = "missing.jsonl"\n', "data: "),
    ],
)  # fmt: skip
def test_bad_options_are_refused_naming_the_file_and_key(
    tmp_path: Path, options: str, message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        _bench(tmp_path, options)
    assert f"dex.toml: benchmarks[0].{message}" in str(err.value)


def test_tally_plan_refuses_in_one_line_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "dex.toml"
    path.write_text(HEAD + 'backward_mode = "guess"\n')
    result = tally("plan", str(path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {path}: benchmarks[0].backward_mode: must be one of: mutate, generate"
    ]
