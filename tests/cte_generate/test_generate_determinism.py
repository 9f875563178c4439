"""The built-in set is reproducible byte for byte; other seeds give other sets."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

from evaltally.benchmarks.cte.generate import (
    BUILTIN_SEED,
    builtin_path,
    generate,
    write_generated,
)


def test_builtin_set_regenerates_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "regen.jsonl.gz"
    assert write_generated(BUILTIN_SEED, out) == 255
    shipped = builtin_path().read_bytes()
    # Compare the content first for a readable failure, then the exact gzip bytes.
    assert gzip.decompress(out.read_bytes()) == gzip.decompress(shipped)
    assert out.read_bytes() == shipped


def test_gzip_header_carries_no_time_or_name(tmp_path: Path) -> None:
    data = builtin_path().read_bytes()
    assert data[:4] == b"\x1f\x8b\x08\x00"  # magic, deflate, no FNAME/FCOMMENT/FEXTRA flags
    assert data[4:8] == b"\x00\x00\x00\x00"  # mtime 0


def test_same_seed_same_bytes_in_a_fresh_interpreter(tmp_path: Path) -> None:
    # A different hash seed would expose any iteration over a set or a hash-ordered dict.
    out = tmp_path / "builtin.jsonl"
    code = (
        "import sys; from pathlib import Path;"
        "from evaltally.benchmarks.cte.generate import write_generated;"
        "write_generated(int(sys.argv[1]), Path(sys.argv[2]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code, str(BUILTIN_SEED), str(out)], check=True, env=env)
    assert out.read_bytes() == gzip.decompress(builtin_path().read_bytes())  # .jsonl: no gzip


def test_different_seed_gives_different_scenarios(builtin_records: list[dict[str, object]]) -> None:
    other = generate(BUILTIN_SEED + 1)
    assert len(other) == len(builtin_records)
    assert {r["item_id"] for r in other}.isdisjoint({r["item_id"] for r in builtin_records})
