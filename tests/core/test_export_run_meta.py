"""The export's run metadata (`FILE.meta.json`): per lane, each limit adopted from the
provider's headers with its value, window, source header and when it was seen."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from evaltally.adapters.ratelimit_headers import any_snapshot
from testkit import tally, write_config, write_items


def test_the_export_lists_the_limits_each_lane_adopted(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process("--no-auth", "--rpm", "6000", "--tpm", "900000")
    write_items(tmp_path / "items.jsonl", 5)
    config = write_config(tmp_path, mock.base_url, limits="concurrency = 2")
    assert tally("run", str(config)).returncode == 0
    out = tmp_path / "export.csv"
    result = tally("export", str(tmp_path / "runs" / "t"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "export.csv.meta.json" in result.stdout
    meta = orjson.loads((tmp_path / "export.csv.meta.json").read_text())
    assert (meta["run"], meta["export"], meta["rows"]) == ("t", "export.csv", 5)
    adopted = {a["limit"]: a for a in meta["lanes"]["m1"]["adopted"]}
    assert adopted["requests"]["value"] == 6000 and adopted["requests"]["window_s"] == 60
    assert adopted["requests"]["header"] == "x-ratelimit-limit-requests"
    assert adopted["tokens"]["value"] == 900000
    assert adopted["tokens"]["header"] == "x-ratelimit-limit-tokens"
    datetime.fromisoformat(adopted["requests"]["seen_at"])
    assert meta["superseded"] == []

    stale = tmp_path / "other.jsonl.meta.json"
    stale.write_text("{}")  # left by an export whose rows were deleted: replaced with them
    again = tally("export", str(tmp_path / "runs" / "t"), "-o", str(tmp_path / "other.jsonl"))
    assert again.returncode == 0, again.stderr
    assert orjson.loads(stale.read_text())["export"] == "other.jsonl"


def test_each_host_s_limit_names_the_header_it_came_from() -> None:
    together = any_snapshot({"x-ratelimit-limit": "10", "x-tokenlimit-limit": "2000"})
    assert together is not None
    assert (together.header_requests, together.window_requests_s) == ("x-ratelimit-limit", 1.0)
    assert together.header_tokens == "x-tokenlimit-limit"
    mistral = any_snapshot({"x-ratelimitbysize-limit-minute": "500000"})
    assert mistral is not None and mistral.header_tokens == "x-ratelimitbysize-limit-minute"
    hugging = any_snapshot({"ratelimit-policy": '"fixed";q=1000;w=300', "ratelimit": "r=9;t=3"})
    assert hugging is not None and hugging.header_requests == "ratelimit-policy"
    anthropic = any_snapshot(
        {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-tokens-limit": "x"}
    )
    assert anthropic is not None
    assert anthropic.header_requests == "anthropic-ratelimit-requests-limit"
    assert anthropic.header_tokens is None  # a value that does not parse names no header
