"""A sweep end to end through the real CLI, a real mock provider and a real ledger file."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from evaltally.ledger import unpack_body
from testkit import FAKE_KEY, tally, write_config, write_items


def _export(run_dir: Path, out: Path) -> list[dict[str, Any]]:
    result = tally("export", str(run_dir), "-o", str(out))
    assert result.returncode == 0, result.stderr
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]


def test_run_status_export_verify(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process("--latency-ms", "2", "--seed", "7")
    write_items(tmp_path / "items.jsonl", 6)
    write_items(tmp_path / "chains.jsonl", 3, turns=3)
    config = write_config(tmp_path, mock.base_url, samples=2, models=("m1", "m2"))
    config.write_text(
        config.read_text() + '\n[[benchmarks]]\nkind = "prompts"\nname = "chat"\n'
        'path = "chains.jsonl"\n'
    )

    planned = tally("plan", str(config))
    assert planned.returncode == 0, planned.stderr
    assert "total planned calls: 42" in planned.stdout  # 2 models x (6x2 + 3x3)
    assert mock.stats()["total"] == 0

    result = tally("run", str(config))
    assert result.returncode == 0, result.stderr
    run_dir = tmp_path / "runs" / "t"
    assert (run_dir / "ledger.sqlite").exists()

    status = tally("status", str(run_dir), "--json")
    counts = orjson.loads(status.stdout)
    assert counts["overall"]["ok"] == 42

    rows = _export(run_dir, tmp_path / "export.jsonl")
    assert len(rows) == 42
    assert {r["status"] for r in rows} == {"ok"}
    assert all(r["schema_version"] == 1 and r["raw_text"] for r in rows)
    assert mock.stats()["total"] == 42

    assert tally("verify", str(run_dir)).returncode == 0

    # A second run of a finished sweep sends nothing.
    again = tally("run", str(config))
    assert again.returncode == 0, again.stderr
    assert mock.stats()["total"] == 42

    # The key never reaches the run directory (ledger, WAL, config copy, anything).
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert FAKE_KEY.encode() not in path.read_bytes(), path
    assert FAKE_KEY not in result.stdout + result.stderr


def test_chain_turns_carry_earlier_answers(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process("--seed", "3")
    write_items(tmp_path / "items.jsonl", 2, turns=3)
    config = write_config(tmp_path, mock.base_url)
    assert tally("run", str(config)).returncode == 0
    db = sqlite3.connect(tmp_path / "runs" / "t" / "ledger.sqlite")
    bodies = [
        orjson.loads(unpack_body(b))
        for (b,) in db.execute("SELECT request_body FROM attempts WHERE request_body IS NOT NULL")
    ]
    third = [b for b in bodies if len(b["messages"]) == 5]
    assert len(third) == 2
    rows = _export(tmp_path / "runs" / "t", tmp_path / "e.jsonl")
    answers = {(r["item_id"], r["step"]): r["raw_text"] for r in rows}
    for body in third:
        item = body["messages"][0]["content"].split()[1]
        assert body["messages"][1] == {"role": "assistant", "content": answers[(f"c{item}", 0)]}
        assert body["messages"][3] == {"role": "assistant", "content": answers[(f"c{item}", 1)]}
