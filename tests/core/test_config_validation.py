"""Inputs that used to end in a traceback (or be sent unchecked) are one line naming the file and
the key, exit 2, and nothing is created (issue 8, items 9, 13 and 18)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaltally.config import load_config
from testkit import FAKE_KEY, REPO, tally, write_items

BASE = """[run]
name = "v"
runs_dir = "runs"
[[models]]
key = "m"
provider = "openai"
model = "gpt"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "EVALTALLY_TEST_KEY"
[models.params]
temperature = 0.0
max_tokens = 64
[models.limits]
timeout_s = 30
[[benchmarks]]
kind = "prompts"
path = "items.jsonl"
"""


def _write(tmp_path: Path, old: str, new: str) -> Path:
    assert old in BASE
    write_items(tmp_path / "items.jsonl", 1)
    path = tmp_path / "v.toml"
    path.write_text(BASE.replace(old, new, 1))
    return path


def _one_line_error(result_stderr: str, *needles: str) -> None:
    assert result_stderr.startswith("error: "), result_stderr
    assert result_stderr.count("\n") == 1, result_stderr
    assert "Traceback" not in result_stderr
    for needle in needles:
        assert needle in result_stderr, (needle, result_stderr)


@pytest.mark.parametrize(
    ("old", "new", "key", "reason"),
    [
        ("timeout_s = 30", "timeout_s = inf", "models[0].limits.timeout_s", "finite"),
        ("timeout_s = 30", "timeout_s = nan", "models[0].limits.timeout_s", "finite"),
        ("timeout_s = 30", "timeout_s = -5", "models[0].limits.timeout_s", "> 0"),
        ("timeout_s = 30", "rpm = -inf", "models[0].limits.rpm", "finite"),
        ("temperature = 0.0", "temperature = nan", "models[0].params.temperature", "inf or nan"),
        ("temperature = 0.0", "stop = [inf]", "models[0].params.stop", "inf or nan"),
        (
            "[models.limits]",
            "[models.price]\ninput_per_mtok = inf\noutput_per_mtok = 1\n[models.limits]",
            "models[0].price.input_per_mtok",
            "finite",
        ),
        (
            "[models.limits]",
            "[models.price]\ninput_per_mtok = -1\noutput_per_mtok = 1\n[models.limits]",
            "models[0].price.input_per_mtok",
            ">= 0",
        ),
        ("max_tokens = 64", 'max_tokens = "lots"', "models[0].params.max_tokens", "positive"),
        ("max_tokens = 64", "max_tokens = 0", "models[0].params.max_tokens", "positive"),
        ("max_tokens = 64", "max_token = 64", "models[0].params.max_token", "unknown parameter"),
        ('name = "v"', 'name = "a\\u0000b"', "run.name", "plain directory name"),
        ('name = "v"', f'name = "{"x" * 200}"', "run.name", "200 bytes"),
        ('runs_dir = "runs"', 'runs_dir = "r\\u0000s"', "run.runs_dir", "control characters"),
        ('"http://127.0.0.1:9/v1"', '"ftp://127.0.0.1:9/v1"', "models[0].base_url", "http"),
        ('"http://127.0.0.1:9/v1"', '"127.0.0.1:9/v1"', "models[0].base_url", "http"),
        ('"http://127.0.0.1:9/v1"', '"http://127.0.0.1:99999/v1"', "models[0].base_url", "valid"),
        ('"http://127.0.0.1:9/v1"', '"http://h/v1?key=abc"', "models[0].base_url", "query"),
        ('key = "m"', 'key = "m\\u0007"', "models[0].key", "control characters"),
    ],
)
def test_bad_values_are_one_line_naming_file_and_key(
    tmp_path: Path, old: str, new: str, key: str, reason: str
) -> None:
    config = _write(tmp_path, old, new)
    result = tally("plan", str(config))
    assert result.returncode == 2
    _one_line_error(result.stderr, str(config), key, reason)
    assert not (tmp_path / "runs").exists()


def test_an_unknown_param_lists_the_known_ones_and_the_passthrough_table(tmp_path: Path) -> None:
    result = tally("plan", str(_write(tmp_path, "max_tokens = 64", "max_token = 64")))
    assert "max_tokens" in result.stderr and "[models.passthrough]" in result.stderr
    for kind in ("anthropic", "gemini", "bedrock"):
        text = BASE.replace('provider = "openai"', f'provider = "{kind}"').replace(
            'base_url = "http://127.0.0.1:9/v1"', 'base_url = "http://127.0.0.1:9"'
        )
        (tmp_path / "k.toml").write_text(text.replace("max_tokens = 64", "maxTokens = 64"))
        result = tally("plan", str(tmp_path / "k.toml"))
        assert result.returncode == 2
        _one_line_error(result.stderr, "models[0].params.maxTokens", f"for the {kind} adapter")


def test_passthrough_params_are_sent_unchecked_with_the_checked_ones(tmp_path: Path) -> None:
    config = _write(
        tmp_path, "[models.limits]", "[models.passthrough]\ntop_k = 5\nmin_p = 0.1\n[models.limits]"
    )
    model = load_config(config).models[0]
    assert dict(model.params) == {"temperature": 0.0, "max_tokens": 64, "top_k": 5, "min_p": 0.1}
    clash = _write(
        tmp_path, "[models.limits]", "[models.passthrough]\nmax_tokens = 9\n[models.limits]"
    )
    result = tally("plan", str(clash))
    _one_line_error(
        result.stderr, "models[0].passthrough.max_tokens", "also set in [models.params]"
    )


def test_moving_a_param_to_passthrough_keeps_the_plan_identity(tmp_path: Path) -> None:
    before = load_config(_write(tmp_path, "max_tokens = 64", "max_tokens = 64\nseed = 7")).models[0]
    moved = _write(tmp_path, "[models.limits]", "[models.passthrough]\nseed = 7\n[models.limits]")
    after = load_config(moved).models[0]
    assert before.identity() == after.identity()


PASTED = "sk-" + "proj-" + "Pasted0Into1Config2Key3abcdef"


@pytest.mark.parametrize("value", [PASTED, "AIza" + "SyPasted0123456789abcdefghijk", "MY-KEY"])
def test_a_key_pasted_into_api_key_env_is_refused_without_showing_it(
    tmp_path: Path, value: str
) -> None:
    config = _write(tmp_path, 'api_key_env = "EVALTALLY_TEST_KEY"', f'api_key_env = "{value}"')
    result = tally("plan", str(config))
    assert result.returncode == 2
    _one_line_error(result.stderr, "models[0].api_key_env", "value is not shown")
    if value != "MY-KEY":
        assert "looks like an API key" in result.stderr
    shown = (result.stdout + result.stderr).replace(str(config), "")
    assert [p for p in {value[i : i + 5] for i in range(len(value) - 4)} if p in shown] == []


@pytest.mark.parametrize(
    "value", [FAKE_KEY + "\r", FAKE_KEY + " ", "sk-two words-here", "k\x01ey1234"]
)
def test_a_key_with_whitespace_or_control_characters_names_the_variable_not_the_value(
    tmp_path: Path, value: str
) -> None:
    config = _write(tmp_path, "timeout_s = 30", "timeout_s = 1")
    result = tally("run", str(config), env={"EVALTALLY_TEST_KEY": value})
    assert result.returncode == 2
    assert "$EVALTALLY_TEST_KEY" in result.stderr and "values not shown" in result.stderr
    assert "Traceback" not in result.stderr
    assert FAKE_KEY[:12] not in result.stdout + result.stderr
    assert "words" not in result.stderr
    assert not (tmp_path / "runs").exists()


def test_a_config_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "latin1.toml"
    config.write_bytes(BASE.replace('name = "v"', 'name = "caf\xe9"').encode("latin-1"))
    result = tally("plan", str(config))
    assert result.returncode == 2
    _one_line_error(result.stderr, str(config), "not UTF-8")


def test_runs_dir_that_is_a_file_is_refused_at_plan_time(tmp_path: Path) -> None:
    config = _write(tmp_path, 'runs_dir = "runs"', 'runs_dir = "occupied"')
    (tmp_path / "occupied").write_text("a file, not a directory")
    for command in ("plan", "run"):
        result = tally(command, str(config))
        assert result.returncode == 2
        _one_line_error(result.stderr, str(config), "run.runs_dir", "is a file")


def test_runs_dir_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    # /proc refuses new directories even to root, which chmod-based tests cannot show.
    config = _write(tmp_path, 'runs_dir = "runs"', 'runs_dir = "/proc/evaltally-runs"')
    result = tally("run", str(config))
    assert result.returncode == 2
    _one_line_error(result.stderr, str(config), "run.runs_dir")


def test_mock_server_refuses_a_port_out_of_range() -> None:
    result = tally("mock-server", "--port", "99999")
    assert result.returncode == 2
    assert result.stderr == "error: --port: must be 0..65535 (0 picks a free one), got 99999\n"


@pytest.mark.parametrize("config", sorted(p.name for p in (REPO / "configs").glob("*.toml")))
def test_every_shipped_config_passes_the_stricter_checks(config: str) -> None:
    loaded = load_config(REPO / "configs" / config)
    assert loaded.models
    assert re.fullmatch(r"[\w.-]+", loaded.name)
