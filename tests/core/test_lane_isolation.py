"""One provider in an outage never slows the others: three providers, three lanes."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

from evaltally.config import load_config
from evaltally.run.session import run_session
from testkit import write_items

LIMITS = (
    "concurrency = 4\nmax_attempts = 50\nbackoff_initial_s = 0.05\nbackoff_max_s = 0.2\n"
    "breaker_threshold = 3\nbreaker_cooldown_s = 0.3\ntimeout_s = 5\n"
)


def _model(key: str, provider: str, base_url: str, env: str, model: str) -> str:
    return (
        f'[[models]]\nkey = "{key}"\nprovider = "{provider}"\nmodel = "{model}"\n'
        f'base_url = "{base_url}"\napi_key_env = "{env}"\n'
        f"[models.params]\nmax_tokens = 32\n[models.limits]\n{LIMITS}\n"
    )


async def test_outage_in_one_lane_does_not_hold_the_others(
    tmp_path: Path, mock_server: Any
) -> None:
    openai = await mock_server(latency_ms=5)
    anthropic = await mock_server(latency_ms=5)
    gemini = await mock_server(latency_ms=5, error_503_rate=1.0, retry_after_s=None)
    write_items(tmp_path / "items.jsonl", 30)
    path = tmp_path / "mixed.toml"
    path.write_text(
        '[run]\nname = "mixed"\n\n'
        + _model("gpt", "openai", f"{openai.base_url}/v1", "K1", "gpt-4o-mini")
        + _model("claude", "anthropic", anthropic.base_url, "K2", "claude-sonnet-4-6")
        + _model("gem", "gemini", gemini.base_url, "K3", "gemini-3.5-flash")
        + '[[benchmarks]]\nkind = "prompts"\npath = "items.jsonl"\n'
    )
    config = load_config(path)
    env = {"K1": "key-one", "K2": "key-two", "K3": "key-three"}
    progress = io.StringIO()
    task = asyncio.create_task(run_session(config, command="test", env=env, progress=progress))
    # Wait (bounded) until the two healthy providers have answered every call.
    for _ in range(400):
        await asyncio.sleep(0.025)
        if openai.stats()["by_status"].get("200", 0) == 30 and (
            anthropic.stats()["by_status"].get("200", 0) == 30
        ):
            break
    assert openai.stats()["by_status"].get("200") == 30
    assert anthropic.stats()["by_status"].get("200") == 30
    # Meanwhile the third lane is still in its outage, with its circuit opening.
    assert gemini.stats()["by_status"].get("200", 0) == 0
    assert gemini.stats()["by_status"].get("503", 0) > 0
    gemini.update(error_503_rate=0.0)
    result = await asyncio.wait_for(task, 60)
    assert result.complete
    assert {k: lane.stats.ok for k, lane in result.lanes.items()} == {
        "gpt": 30,
        "claude": 30,
        "gem": 30,
    }
    assert result.lanes["gem"].breaker.times_opened >= 1
    assert result.lanes["gpt"].breaker.times_opened == 0
