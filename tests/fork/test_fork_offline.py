"""`tally fork` of a chain an offline predictor answered is refused with advice that applies
to forks (not the config advice of a baseline bound to the wrong benchmark), and leaves no
run directory behind."""

from __future__ import annotations

from pathlib import Path

import orjson

from testkit import tally, write_items


def test_forking_a_baseline_chain_says_what_to_fork_instead(tmp_path: Path) -> None:
    write_items(tmp_path / "items.jsonl", 2, turns=2)
    config = tmp_path / "b.toml"
    config.write_text(
        '[run]\nname = "b"\nruns_dir = "runs"\n[[models]]\nkey = "echo"\n'
        'provider = "baseline"\nmodel = "echo"\n'
        '[[benchmarks]]\nkind = "prompts"\npath = "items.jsonl"\n'
    )
    assert tally("run", str(config)).returncode == 0
    run_dir = tmp_path / "runs" / "b"
    assert tally("export", str(run_dir), "-o", str(tmp_path / "e.jsonl")).returncode == 0
    chain = orjson.loads((tmp_path / "e.jsonl").read_text().splitlines()[0])["chain_id"]
    done = tally("fork", str(run_dir), "--chain", chain, "--at", "1", "--replays", "2")
    assert done.returncode == 2
    assert "an offline predictor" in done.stderr and "[benchmarks.roles]" not in done.stderr
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["b"]
