"""The project's verifier and stats accept the built-in set (sandboxed replay of every record)."""

from __future__ import annotations

from evaltally.benchmarks.cte.generate import builtin_path
from evaltally.benchmarks.cte.stats import file_stats
from evaltally.benchmarks.cte.verify import verify_file


def test_verifier_replays_every_builtin_record() -> None:
    report = verify_file(builtin_path())
    assert report.ok
    assert report.count("ok") == 255


def test_stats_of_the_builtin_set() -> None:
    stats = file_stats("builtin")
    assert stats["scenarios"] == 255
    assert stats["scored_calls"] == 10_200
    assert stats["effect_steps"] > 0
    assert {(c["service"], c["kind"]) for c in stats["by"]} == {
        ("auth", "threshold_change"),
        ("bank", "branch_inversion"),
        ("cart", "branch_inversion"),
        ("filesystem", "branch_inversion"),
        ("ratelimiter", "branch_inversion"),
        ("ratelimiter", "clock_jump"),
        ("ratelimiter", "state_injection"),
        ("ratelimiter", "threshold_change"),
        ("reservation", "branch_inversion"),
    }
