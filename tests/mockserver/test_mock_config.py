"""Knob validation, fault-spec parsing and the rate-limit arithmetic (no server needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaltally.errors import ConfigError
from evaltally.mockserver import FaultRule, MockConfig
from evaltally.mockserver.ratelimit import RateLimiter, openai_duration, retry_after_header


def test_from_mapping_is_strict_and_accepts_dashes() -> None:
    cfg = MockConfig.from_mapping({"latency-ms": 5, "rpm": 60, "faults": [{"kind": "503"}]})
    assert cfg.latency_ms == 5.0 and cfg.rpm == 60 and cfg.faults == (FaultRule("503"),)
    with pytest.raises(ConfigError, match="latncy_ms"):
        MockConfig.from_mapping({"latncy_ms": 5})
    with pytest.raises(ConfigError, match=r"faults\[0\]\.kind"):
        MockConfig.from_mapping({"faults": [{"kind": "418"}]})
    with pytest.raises(ConfigError, match="sum"):
        MockConfig.from_mapping({"error_500_rate": 0.7, "drop_rate": 0.7})
    with pytest.raises(ConfigError, match="drop_rate"):
        MockConfig(drop_rate=1.5)


def test_zero_rpm_means_unlimited() -> None:
    assert MockConfig.from_mapping({"rpm": 0}).rpm is None


def test_toml_file_with_mock_table(tmp_path: Path) -> None:
    path = tmp_path / "mock.toml"
    path.write_text(
        '[mock]\nseed = 3\nrpm = 120\n[[mock.faults]]\nkind = "429"\nscope = "body"\n',
        encoding="utf-8",
    )
    cfg = MockConfig.from_toml(path)
    assert cfg.seed == 3 and cfg.faults[0].scope == "body"
    path.write_text("[mock]\nbogus = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"mock\.toml: bogus"):
        MockConfig.from_toml(path)


def test_cli_fault_spec() -> None:
    assert FaultRule.parse("429:1:body:2") == FaultRule("429", 1, "body", 2.0)
    assert FaultRule.parse("drop") == FaultRule("drop")
    with pytest.raises(ConfigError):
        FaultRule.parse("429:x")


def test_bucket_refills_continuously_and_reports_wait() -> None:
    now = [0.0]
    lim = RateLimiter(rpm=60, tpm=None, clock=lambda: now[0])  # 1/s, burst 1
    assert lim.admit(0).limited_by is None
    refused = lim.admit(0)
    assert refused.limited_by == "requests" and refused.retry_after_s == pytest.approx(1.0)
    now[0] = 0.5
    assert lim.admit(0).retry_after_s == pytest.approx(0.5)
    now[0] = 1.0
    assert lim.admit(0).limited_by is None


def test_oversized_token_request_waits_for_a_full_bucket_instead_of_never() -> None:
    now = [0.0]
    lim = RateLimiter(rpm=None, tpm=600, clock=lambda: now[0])  # 10/s, burst 10
    assert lim.admit(1000).limited_by is None  # charged the whole bucket
    assert lim.admit(1000).retry_after_s == pytest.approx(1.0)


def test_header_formats() -> None:
    assert retry_after_header(0.1) == "1" and retry_after_header(2.0) == "2"
    assert openai_duration(0.012) == "12ms"
    assert openai_duration(6.0) == "6s" and openai_duration(1.5) == "1.5s"
    assert openai_duration(60.0) == "1m0s" and openai_duration(3725) == "1h2m5s"
