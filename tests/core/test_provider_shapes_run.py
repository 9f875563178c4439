"""Providers as they really answer, through a real run against the mock provider: reasoning
shown inline or in parts or only in a total is recorded as reasoning (not as the answer), and a
model id the endpoint does not serve stops its lane after one request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evaltally.config import load_config
from evaltally.run.session import run_session
from testkit import FAKE_KEY, exported, tally, write_config, write_items

ENV = {"EVALTALLY_TEST_KEY": FAKE_KEY}
ANSWER = '{"answer": 1}'
ONE_AT_A_TIME = "concurrency = 1\nbackoff_initial_s = 0.02\nbackoff_max_s = 0.2"


@pytest.mark.parametrize("shape", ["inline", "parts", "total_only"])
def test_reasoning_shapes_are_read_as_reasoning(
    tmp_path: Path, mock_process: Any, shape: str
) -> None:
    knobs = tmp_path / "mock.toml"
    knobs.write_text(
        f'reasoning_shape = "{shape}"\nreasoning_tokens = 40\n'
        f"default_answer = '{ANSWER}'\napi_key = \"{FAKE_KEY}\"\n"
    )
    mock = mock_process("--config", str(knobs))
    write_items(tmp_path / "items.jsonl", 3)
    config = write_config(tmp_path, mock.base_url, limits="concurrency = 2")
    run = tally("run", str(config))
    assert run.returncode == 0, run.stderr
    run_dir = tmp_path / "runs" / "t"
    out = tmp_path / "out.jsonl"
    rows = exported(run_dir, out)
    assert [r["raw_text"] for r in rows] == [ANSWER] * 3
    assert all(r["usage"]["reasoning_tokens"] > 0 for r in rows)
    status = tally("status", str(run_dir))
    assert status.returncode == 0, status.stderr
    assert "m1: reasoned in 3 of 3 answered calls" in status.stderr
    assert "counted by evaltally" in status.stderr


MODELS = {
    "openai": ('provider = "openai"', "/v1"),
    "anthropic": ('provider = "anthropic"', ""),
    "gemini": ('provider = "gemini"', ""),
}


@pytest.mark.parametrize("provider", sorted(MODELS))
async def test_a_missing_model_stops_its_lane_after_one_request(
    tmp_path: Path, mock_server: Any, provider: str
) -> None:
    srv = await mock_server(models=("m1-model",))
    write_items(tmp_path / "items.jsonl", 6)
    path = write_config(tmp_path, srv.base_url, limits=ONE_AT_A_TIME)
    line, suffix = MODELS[provider]
    path.write_text(
        path.read_text() + f'\n[[models]]\nkey = "typo"\n{line}\nmodel = "m1-modle"\n'
        f'base_url = "{srv.base_url}{suffix}"\napi_key_env = "EVALTALLY_TEST_KEY"\n'
        f"[models.params]\nmax_tokens = 16\n[models.limits]\n{ONE_AT_A_TIME}\n"
    )
    result = await run_session(load_config(path), command="test", env=ENV)
    good, typo = result.lanes["m1"], result.lanes["typo"]
    assert good.stats.ok == 6
    assert (typo.stats.failed, typo.stats.blocked) == (1, 5)
    assert typo.stop_reason is not None
    assert "does not serve model 'm1-modle'" in typo.stop_reason
    assert "m1-modle" in typo.stop_reason.split("(", 1)[1]  # the provider's message, readable
    assert srv.stats()["total"] == 6 + 1


def test_status_shows_the_limits_each_lane_was_told_and_adopted(
    tmp_path: Path, mock_process: Any
) -> None:
    mock = mock_process("--no-auth", "--rpm", "6000", "--tpm", "900000")
    write_items(tmp_path / "items.jsonl", 5)
    config = write_config(tmp_path, mock.base_url, limits="concurrency = 2")
    assert tally("run", str(config)).returncode == 0
    status = tally("status", str(tmp_path / "runs" / "t"))
    assert status.returncode == 0, status.stderr
    line = next(x for x in status.stdout.splitlines() if x.startswith("lane m1 limits:"))
    assert "advertised 6,000 requests per minute" in line
    assert "advertised 900,000 tokens per minute" in line


async def test_a_refused_config_change_names_what_changed(tmp_path: Path, mock_server: Any) -> None:
    from evaltally.errors import PlanMismatchError

    srv = await mock_server(models=("m1-model",))
    write_items(tmp_path / "items.jsonl", 3)
    path = write_config(tmp_path, srv.base_url, models=("m1",), limits=ONE_AT_A_TIME)
    path.write_text(path.read_text().replace('model = "m1-model"', 'model = "m1-modle"'))
    first = await run_session(load_config(path), command="test", env=ENV)
    assert first.lanes["m1"].stop_reason is not None
    path.write_text(path.read_text().replace('model = "m1-modle"', 'model = "m1-model"'))
    with pytest.raises(PlanMismatchError) as refused:
        await run_session(load_config(path), command="test", env=ENV)
    assert "models[m1].model: 'm1-modle' -> 'm1-model'" in str(refused.value)
