"""A benchmark's error fails its call or is refused at plan time: never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kinds_kit import tally_kinds
from testkit import tally, write_items


def test_baseline_with_a_benchmark_it_cannot_answer_is_refused_at_plan(tmp_path: Path) -> None:
    write_items(tmp_path / "items.jsonl", 2)
    config = tmp_path / "b.toml"
    config.write_text(
        '[run]\nname = "b"\n[[models]]\nkey = "replay"\nprovider = "baseline"\n'
        'model = "replay"\n[[benchmarks]]\nkind = "prompts"\npath = "items.jsonl"\n'
    )
    for command in ("plan", "run"):
        result = tally(command, str(config))
        assert result.returncode == 2
        message = result.stderr.strip()
        assert "\n" not in message and "Traceback" not in message
        assert str(config) in message and "models[0].model" in message
        assert "'prompts'" in message and "offers echo, guesser, oracle" in message


def test_a_render_error_fails_that_call_and_the_run_goes_on(
    tmp_path: Path, mock_process: Any
) -> None:
    mock = mock_process()
    config = tmp_path / "r.toml"
    config.write_text(
        '[run]\nname = "r"\nruns_dir = "runs"\n[[models]]\nkey = "m1"\nprovider = "openai"\n'
        f'model = "m1-model"\nbase_url = "{mock.base_url}/v1"\n'
        'api_key_env = "EVALTALLY_TEST_KEY"\n'
        '[[benchmarks]]\nkind = "verified"\nitems = 3\nbroken = "v1"\n'
    )
    result = tally_kinds("run", str(config))
    assert result.returncode == 3, result.stderr  # incomplete, as documented
    assert "Traceback" not in result.stderr
    assert "item 'v1' step 0" in result.stderr
    assert "could not render: RuntimeError('item v1 cannot be rendered')" in result.stderr
    assert "m1: 3 finished this session: ok 2, parse_error 0, failed 1" in result.stdout
    assert mock.stats()["total"] == 2
