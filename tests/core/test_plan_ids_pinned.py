"""Existing runs keep resuming: single-role benchmarks plan byte-identical call and chain ids.

The values below were recorded from the release before roles existed (commit e0c620c) by
planning these configs and hashing `"<call_id> <chain_id>\\n"` for every call in plan order.
A change here means every run started before it would be refused on resume.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from evaltally.benchmarks.binding import load_benchmarks
from evaltally.config import load_config
from evaltally.ledger.plan import planned_row
from evaltally.plan import iter_plan, plan_rows
from testkit import REPO

ITEMS = (
    '{"id": "q1", "messages": [{"role": "user", "content": "What is 2 + 2?"}]}\n'
    '{"id": "q2", "messages": [{"role": "system", "content": "Be brief."}, '
    '{"role": "user", "content": "Name a colour."}]}\n'
)
CHAINS = (
    '{"id": "c1", "system": "Answer in one line.", "turns": ["Pick a number.", "Double it.", '
    '"Add one."]}\n'
    '{"id": "c2", "turns": ["Say hello.", "Say goodbye."]}\n'
)
CONFIG = """
[run]
name = "pin"

[[models]]
key = "gpt"
provider = "openai"
model = "gpt-4o-mini"
api_key_env = "PIN_KEY"
[models.params]
temperature = 0.0
max_tokens = 64

[[models]]
key = "claude"
provider = "anthropic"
model = "claude-haiku-4-5"
reasoning = "off"
[models.params]
max_tokens = 128

[[benchmarks]]
kind = "prompts"
path = "items.jsonl"
samples = 2

[[benchmarks]]
kind = "prompts"
name = "chat"
path = "chains.jsonl"
parse = "json"
"""

RECORDED = {
    "demo": (
        91800,
        "1c4f26bf7eddef15e5568e2d6d16370a12fe01703d38c1c2bcfc5c4ffa4d868b",
        ("32163a78416d8dfb3e189175", "b24137697ce704e55ca74f6f"),
    ),
    "prompts-example": (
        30,
        "5220e8fccbfb8b54e68bf4de18a7dacce3745cc775354333fe97ad696b6b5634",
        ("3f8f5ddbc3c43c388119a3db", "35822d6665eb916368ccf66f"),
    ),
    "two-models-two-benchmarks": (
        18,
        "0e9b3b58406430c59bf75cab6a140a342f7ee20a6a4f300e4282623074a62bdd",
        ("fc70eedad4b95ec2376a144b", "a12c3e037cd4e3c69324c261"),
    ),
}


def _plan_digest(
    path: Path, text: str | None = None, only: str | None = None
) -> tuple[int, str, tuple[str, str]]:
    """Count, digest and first ids of the plan (of benchmark `only`'s calls when given)."""
    config = load_config(path, text=text)
    digest = hashlib.sha256()
    n = 0
    first = ("", "")
    for call in iter_plan(config, load_benchmarks(config)):
        if only is not None and call.benchmark != only:
            continue
        digest.update(f"{call.call_id} {call.chain_id}\n".encode())
        if n == 0:
            first = (call.call_id, call.chain_id)
        n += 1
    return n, digest.hexdigest(), first


def test_prompts_example_plans_the_recorded_ids() -> None:
    path = REPO / "configs" / "prompts-example.toml"
    assert _plan_digest(path) == RECORDED["prompts-example"]


def test_demo_planned_with_cte_v1_prompts_has_the_recorded_ids() -> None:
    """CTE's prompt version is part of each call's spec, so cte-v2 plans new ids by design; a
    run planned before it resumes with `prompt_version = "cte-v1"` and gets exactly its ids.
    The demo's CTE calls are pinned; the DexBench benchmark added beside them changes none."""
    path = REPO / "configs" / "demo.toml"
    text = path.read_text()
    assert text.count('kind = "cte"\n') == 1
    old = text.replace('kind = "cte"\n', 'kind = "cte"\nprompt_version = "cte-v1"\n')
    assert _plan_digest(path, old, only="cte") == RECORDED["demo"]
    n, digest, _ = _plan_digest(path, only="cte")
    assert n == RECORDED["demo"][0] and digest != RECORDED["demo"][1]


def test_a_multi_model_multi_benchmark_prompts_sweep_plans_the_recorded_ids(
    tmp_path: Path,
) -> None:
    (tmp_path / "items.jsonl").write_text(ITEMS)
    (tmp_path / "chains.jsonl").write_text(CHAINS)
    path = tmp_path / "pin.toml"
    path.write_text(CONFIG)
    assert _plan_digest(path) == RECORDED["two-models-two-benchmarks"]


def test_plan_rows_are_the_plan_as_the_ledger_stores_it(tmp_path: Path) -> None:
    """`plan_rows` (what `tally run` records) is `iter_plan` call for call, as planned rows."""
    (tmp_path / "items.jsonl").write_text(ITEMS)
    (tmp_path / "chains.jsonl").write_text(CHAINS)
    (tmp_path / "pin.toml").write_text(CONFIG)
    for path in (tmp_path / "pin.toml", REPO / "configs" / "demo.toml"):
        config = load_config(path)
        benchmarks = load_benchmarks(config)
        rows = list(plan_rows(config, benchmarks))
        assert rows == [planned_row(call) for call in iter_plan(config, benchmarks)]
        assert len(rows) >= 18
