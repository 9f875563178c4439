"""Named subsets and the export's scenario_set: the reasoning-mode probe and the no-effect probe."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from evaltally.benchmarks.cte.benchmark import CteBenchmark
from evaltally.benchmarks.cte.generate import write_generated
from evaltally.config import BenchmarkConfig
from evaltally.errors import ConfigError
from evaltally.records import PlannedCall


def bench(tmp_path: Path, **options: object) -> CteBenchmark:
    return CteBenchmark(BenchmarkConfig("cte", "cte", 1, options, tmp_path, tmp_path / "c.toml", 0))


def scenario_set(b: CteBenchmark) -> str:
    sid = next(iter(b.scenarios))
    call = PlannedCall("c", "ch", 0, "m", "cte", sid, 0, "answers_revealed", {"future_index": 0})
    return str(b.export_fields(call)["scenario_set"])


def test_reasoning_probe_is_24_scenarios_over_every_service(tmp_path: Path) -> None:
    b = bench(tmp_path, subset="reasoning-probe")
    assert len(b.scenarios) == 24
    per_service = Counter(s.domain for s in b.scenarios.values())
    assert set(per_service.values()) == {4} and len(per_service) == 6
    assert len({s.kind for s in b.scenarios.values() if s.domain == "ratelimiter"}) == 4
    assert list(b.scenarios) == list(bench(tmp_path, subset="reasoning-probe").scenarios)
    assert scenario_set(b) == "reasoning_probe"
    assert scenario_set(bench(tmp_path, limit=3)) == "main"


def test_a_no_effect_file_is_marked_as_the_no_effect_probe(tmp_path: Path) -> None:
    path = tmp_path / "probe.jsonl"
    write_generated(5, path, "no-effect")
    assert scenario_set(bench(tmp_path, data=str(path), limit=5)) == "no_effect_probe"


def test_unknown_subset_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"benchmarks\[0\]\.subset"):
        bench(tmp_path, subset="tiny")
