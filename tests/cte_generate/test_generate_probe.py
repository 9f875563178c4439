"""The no-effect probe: same services and design, no changed response in the scored window."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from evaltally.benchmarks.cte.baselines import graded_calls
from evaltally.benchmarks.cte.cli import app
from evaltally.benchmarks.cte.generate import NO_EFFECT_COMPOSITION
from evaltally.benchmarks.cte.grade import summarize
from evaltally.benchmarks.cte.records import load_scenarios
from evaltally.benchmarks.cte.verify import verify_file


def test_no_effect_probe_replays_and_replay_scores_everything(tmp_path: Path) -> None:
    out = tmp_path / "probe.jsonl"
    result = CliRunner().invoke(
        app, ["generate", "--seed", "3", "--probe", "no-effect", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    scenarios = load_scenarios(out)
    assert len(scenarios) == 106
    cells = Counter((s.domain, s.kind) for s in scenarios)
    assert cells == {(d, k): n for d, k, n in NO_EFFECT_COMPOSITION}
    assert all(not s.effect_steps() for s in scenarios)
    assert verify_file(out).count("ok") == 106
    replay = summarize(graded_calls(scenarios, "replay"), resamples=0)
    assert replay["n_calls"] == 106 * 40 and replay["n_effect_steps"] == 0
    assert replay["metrics"]["all_call_vm"]["value"] == 1.0


def test_unknown_probe_is_one_line_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["generate", "--seed", "3", "--probe", "nope", "-o", str(tmp_path / "x")]
    )
    assert result.exit_code == 2
    assert "--probe: unknown probe 'nope'; valid: no-effect" in result.output
