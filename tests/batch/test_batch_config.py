"""Batch-mode model keys: validated with errors naming the key, priced at the documented batch
discount, and outside the model's identity (switching mode keeps every call id)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaltally.benchmarks.binding import load_benchmarks
from evaltally.config import Price, load_config
from evaltally.errors import ConfigError
from evaltally.plan import iter_plan
from testkit import write_items


def _config(tmp_path: Path, model: str) -> Path:
    write_items(tmp_path / "items.jsonl", 3, turns=2)
    path = tmp_path / "c.toml"
    path.write_text(
        '[run]\nname = "b"\n[[models]]\nkey = "m"\n'
        + model
        + '\n[[benchmarks]]\nkind = "prompts"\npath = "items.jsonl"\n'
    )
    return path


def test_batch_mode_prices_at_the_documented_discount(tmp_path: Path) -> None:
    cfg = load_config(
        _config(
            tmp_path,
            'provider = "openai"\nmodel = "gpt-4o"\nmode = "batch"\n'
            "[models.batch]\npoll_s = 0.5\nmax_requests = 100",
        )
    )
    (model,) = cfg.models
    assert model.mode == "batch" and model.batch is not None
    assert (model.batch.kind, model.batch.max_requests, model.batch.poll_s) == ("openai", 100, 0.5)
    assert model.batch.list_price == Price(2.5, 10.0)
    assert model.price == Price(1.25, 5.0)
    assert model.batch.fallback == "none"


@pytest.mark.parametrize(
    ("model", "key", "reason"),
    [
        ('provider = "deepseek"\nmodel = "x"\nmode = "batch"', "models[0].mode", "no batch API"),
        ('provider = "openai"\nmodel = "x"\nmode = "bulk"', "models[0].mode", "sync, batch"),
        (
            'provider = "openai"\nmodel = "x"\nbatch_fallback = "sync"',
            "models[0].batch_fallback",
            'only with mode = "batch"',
        ),
        (
            'provider = "openai"\nmodel = "x"\nmode = "batch"\nbatch_fallback = "later"',
            "models[0].batch_fallback",
            "none, sync",
        ),
        (
            'provider = "openai"\nmodel = "x"\nmode = "batch"\n'
            "[models.batch]\nmax_requests = 60000",
            "models[0].batch.max_requests",
            "50,000",
        ),
        (
            'provider = "openai"\nmodel = "x"\nmode = "batch"\n[models.batch]\npoll = 1',
            "models[0].batch.poll",
            "unknown key",
        ),
        (
            'provider = "baseline"\nmodel = "replay"\nmode = "batch"',
            "models[0].mode",
            "no batch API",
        ),
    ],
)
def test_bad_batch_keys_name_the_key_and_the_reason(
    tmp_path: Path, model: str, key: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, model))
    assert info.value.key == key and reason in info.value.reason


def test_switching_between_sync_and_batch_keeps_every_call_id(tmp_path: Path) -> None:
    def ids(mode: str) -> list[str]:
        cfg = load_config(
            _config(tmp_path, f'provider = "anthropic"\nmodel = "c"\nmode = "{mode}"')
        )
        return [c.call_id for c in iter_plan(cfg, load_benchmarks(cfg))]

    assert ids("sync") == ids("batch") and len(ids("sync")) == 6
