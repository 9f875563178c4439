"""Typed model keys for what providers document as extra settings: reasoning effort and
budget, the API version and the Bedrock region."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from evaltally.config import ModelConfig, load_config
from evaltally.errors import ConfigError
from evaltally.runner.lane import Lane
from evaltally.runner.units import build_unit

MODEL = """
[run]
name = "k"
[[models]]
key = "m"
provider = "{provider}"
model = "{model}"
api_key_env = "K"
reasoning = "on"
{keys}
[models.params]
max_tokens = 8192
[[benchmarks]]
kind = "prompts"
path = "items.jsonl"
"""


def _load(tmp_path: Path, provider: str, model: str, keys: str) -> ModelConfig:
    path = tmp_path / "k.toml"
    path.write_text(MODEL.format(provider=provider, model=model, keys=keys))
    return load_config(path).models[0]


def _body(
    tmp_path: Path, provider: str, model: str, keys: str
) -> tuple[dict[str, object], dict[str, str]]:
    m = _load(tmp_path, provider, model, keys)
    unit = build_unit(m, "secret", Lane(m.key, m.limits))
    assert unit.adapter is not None and unit.endpoint is not None
    request = unit.adapter.build_request(unit.endpoint, [{"role": "user", "content": "hi"}])
    return orjson.loads(request.body), dict(request.headers)


def test_reasoning_effort_reaches_an_openai_request(tmp_path: Path) -> None:
    body, _ = _body(tmp_path, "openai", "gpt-5.4", 'reasoning_effort = "high"')
    assert body["reasoning_effort"] == "high"


def test_budget_and_api_version_reach_an_anthropic_request(tmp_path: Path) -> None:
    keys = 'reasoning_budget = 3000\napi_version = "2099-01-01"'
    body, headers = _body(tmp_path, "anthropic", "claude-sonnet-4-6", keys)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 3000}
    assert headers["anthropic-version"] == "2099-01-01"


def test_effort_and_budget_are_part_of_the_identity_only_when_set(tmp_path: Path) -> None:
    plain = _load(tmp_path, "openai", "gpt-5.4", "")
    effort = _load(tmp_path, "openai", "gpt-5.4", 'reasoning_effort = "low"')
    assert "reasoning_effort" not in plain.identity()
    assert effort.identity()["reasoning_effort"] == "low"


@pytest.mark.parametrize(
    ("keys", "key", "reason"),
    [
        ("reasoning_budget = 0", "models[0].reasoning_budget", "must be > 0"),
        ('reasoning_budget = "lots"', "models[0].reasoning_budget", "must be int"),
        ('reasoning_effort = ""', "models[0].reasoning_effort", "must not be empty"),
        ("api_version = 3", "models[0].api_version", "must be str"),
        ('extra = { reasoning_effort = "high" }', "models[0].extra", "unknown key"),
        ('api_version = "v1"', "models[0].api_version", "anthropic and gemini endpoints only"),
    ],
)
def test_bad_model_keys_name_file_and_key(tmp_path: Path, keys: str, key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, "openai", "gpt-5.4", keys)
    message = str(info.value)
    assert "k.toml" in message and key in message and reason in message


def test_effort_without_reasoning_on_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "k.toml"
    text = MODEL.format(provider="openai", model="gpt-5.4", keys='reasoning_effort = "high"')
    path.write_text(text.replace('reasoning = "on"', 'reasoning = "off"'))
    with pytest.raises(ConfigError, match=r"models\[0\]\.reasoning_effort: applies only with"):
        load_config(path)


def test_region_reaches_a_bedrock_url_and_the_lane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-example")
    m = _load(tmp_path, "bedrock", "anthropic.claude", 'region = "eu-west-3"')
    assert m.region == "eu-west-3" and m.endpoint_identity()[-1] == "eu-west-3"
    unit = build_unit(m, None, Lane(m.key, m.limits))
    assert unit.adapter is not None and unit.endpoint is not None
    request = unit.adapter.build_request(unit.endpoint, [{"role": "user", "content": "hi"}])
    assert request.url.startswith("https://bedrock-runtime.eu-west-3.amazonaws.com/")
