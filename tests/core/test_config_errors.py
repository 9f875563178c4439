"""Bad input gets one clear message naming the file, key and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaltally import load_config
from evaltally.benchmarks.binding import load_benchmarks
from evaltally.config import read_api_keys
from evaltally.errors import ConfigError, CredentialError, DataError
from testkit import write_config, write_items


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


BASE = """
[run]
name = "x"
[[models]]
key = "m"
provider = "openai"
model = "gpt"
api_key_env = "SOME_KEY"
[[benchmarks]]
kind = "prompts"
path = "items.jsonl"
"""


@pytest.mark.parametrize(
    ("edit", "key", "reason"),
    [
        (("[run]", "[run]\ncolour = 1"), "run.colour", "unknown key"),
        (('model = "gpt"', 'model = "gpt"\ntemprature = 0'), "models[0].temprature", "unknown key"),
        (('name = "x"', "name = 3"), "run.name", "must be str"),
        (
            ('api_key_env = "SOME_KEY"', 'api_key_env = "SOME_KEY"\n[models.limits]\nrpm = "fast"'),
            "models[0].limits.rpm",
            "must be int or float",
        ),
        (
            (
                'api_key_env = "SOME_KEY"',
                'api_key_env = "SOME_KEY"\n[models.limits]\nconcurrency = true',
            ),
            "models[0].limits.concurrency",
            "must be int",
        ),
        (('kind = "prompts"', 'kind = "nope"'), "benchmarks[0].kind", "unknown benchmark"),
        (('provider = "openai"', 'provider = "openia"'), "models[0].provider", "openai"),
    ],
)
def test_config_errors_name_file_key_reason(
    tmp_path: Path, edit: tuple[str, str], key: str, reason: str
) -> None:
    path = _config(tmp_path, BASE.replace(*edit, 1))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message and key in message and reason in message


def test_missing_key_variables_are_all_reported_without_values(tmp_path: Path) -> None:
    write_items(tmp_path / "items.jsonl", 2)
    path = write_config(tmp_path, "http://127.0.0.1:9", models=("a", "b"))
    config = load_config(path)
    with pytest.raises(CredentialError) as info:
        read_api_keys(config, env={})
    assert "'a'" in str(info.value) and "'b'" in str(info.value)
    assert "$EVALTALLY_TEST_KEY" in str(info.value)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            '{"id": "a", "messages": [{"role": "user", "content": "x"}]}\n' * 2,
            "duplicate item id 'a'",
        ),
        ("not json\n", ":1: not valid JSON"),
        ('{"id": "a", "turns": []}\n', "'turns' must be a non-empty list"),
        (
            '{"id": "a", "messages": [{"role": "robot", "content": "x"}]}\n',
            "messages[0] needs a role",
        ),
    ],
)
def test_item_file_errors(tmp_path: Path, content: str, expected: str) -> None:
    (tmp_path / "items.jsonl").write_text(content)
    config = load_config(write_config(tmp_path, "http://127.0.0.1:9"))
    with pytest.raises(DataError) as info:
        load_benchmarks(config)
    assert "items.jsonl" in str(info.value) and expected in str(info.value)


def test_unreadable_item_file(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, "http://127.0.0.1:9", items="missing.jsonl"))
    with pytest.raises(DataError, match=r"missing\.jsonl: cannot read"):
        load_benchmarks(config)
