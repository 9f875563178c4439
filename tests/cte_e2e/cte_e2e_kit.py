"""Helpers for the CTE end-to-end tests: small scenario files and configs in tmp_path."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson

from evaltally.benchmarks.cte.generate import builtin_path

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
