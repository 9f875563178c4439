"""Helpers for the CTE end-to-end tests: small scenario files and configs in tmp_path."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import orjson

from evaltally.benchmarks.base import StepAnswer
from evaltally.benchmarks.cte.benchmark import CteBenchmark
from evaltally.benchmarks.cte.generate import builtin_path
from evaltally.prompts.cte import PROMPT_VERSION
from evaltally.records import PlannedCall, Status
from testkit import tally

REPO = Path(__file__).resolve().parents[2]
CORE_V1 = REPO.parent / "shared/data/cte-bench/core_v1.jsonl.gz"


def builtin_records(
    n: int | None = None, *, domains: tuple[str, ...] = ()
) -> list[dict[str, object]]:
    with gzip.open(builtin_path(), "rb") as fh:
        recs = [orjson.loads(line) for line in fh if line.strip()]
    if domains:
        recs = [r for r in recs if r["domain"] in domains]
    return recs[:n] if n is not None else recs


def write_records(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


BASELINES = "\n".join(
    f'[[models]]\nkey = "{m}"\nprovider = "baseline"\nmodel = "{m}"\n[models.limits]\n'
    "concurrency = 32\n"
    for m in ("replay", "copy_last", "majority_status")
)


def baseline_config(tmp_path: Path, name: str, data: str, extra: str = "") -> Path:
    text = (
        f'[run]\nname = "{name}"\nruns_dir = "runs"\n\n{BASELINES}\n'
        f'[[benchmarks]]\nkind = "cte"\ndata = "{data}"\n{extra}'
    )
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


WRONG = {"wrong": 3}


def prompt_sha(messages: list[dict[str, str]]) -> str:
    """What the mock's scripted answers match: the sha256 of the last user message."""
    return hashlib.sha256(messages[-1]["content"].encode()).hexdigest()


def scripted_rollout(
    bench: CteBenchmark, sid: str, wrong_at: int | None, *, failed_at: int | None = None
) -> list[tuple[str, Any]]:
    """(prompt sha, answer) along a free rollout of scenario `sid` that answers every call
    right but call `wrong_at` (0-based), which gets WRONG. Call `failed_at` is answered right
    too, but the later calls are the ones rendered while it had no answer."""
    scenario = bench.scenarios[sid]
    out: list[tuple[str, Any]] = []
    earlier: list[StepAnswer] = []
    for i in range(len(scenario.scored)):
        spec = {"future_index": i, "prompt_version": PROMPT_VERSION}
        call = PlannedCall("c", "ch", i, "m", "cte", sid, 0, "free_rollout", spec)
        value = WRONG if i == wrong_at else scenario.scored[i].response
        out.append((prompt_sha(bench.render(call, earlier)), value))
        if i == failed_at:
            earlier.append(StepAnswer(i, Status.FAILED, None, None))
        else:
            earlier.append(StepAnswer(i, Status.OK, json.dumps(value), value))
    return out


def record_rollouts(tmp_path: Path, base_url: str, data: Path, limits: str = "") -> Path:
    """`tally run` of the free rollouts in `data`, answered by model "sim" of the provider at
    `base_url` (`limits`: a `[models.limits]` body); the run directory."""
    (tmp_path / "cte.toml").write_text(
        '[run]\nname = "rollout"\nruns_dir = "runs"\n'
        f'[[models]]\nkey = "sim"\nprovider = "openai"\nmodel = "sim"\n'
        f'base_url = "{base_url}/v1"\napi_key_env = "EVALTALLY_TEST_KEY"\n'
        + (f"[models.limits]\n{limits}\n" if limits else "")
        + f'[[benchmarks]]\nkind = "cte"\ndata = "{data}"\nprotocols = ["free_rollout"]\n'
    )
    done = tally("run", str(tmp_path / "cte.toml"))
    assert done.returncode == 0, done.stderr
    return tmp_path / "runs" / "rollout"
