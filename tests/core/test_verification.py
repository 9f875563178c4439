"""The verification hook: verdicts in the ledger and the export, a hash chain `tally verify`
checks, crashed and timed-out checks recorded with their reason, and a re-grade that reaches
the same verdicts from the ledger without a single model request."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from evaltally.ledger.schema import MIGRATIONS
from kinds_kit import tally_kinds
from testkit import REPO

FIXTURE = REPO / "tests" / "fixtures" / "ledger-v1"


def _config(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "v.toml"
    path.write_text(
        '[run]\nname = "v"\nruns_dir = "runs"\n'
        '[[models]]\nkey = "m1"\nprovider = "openai"\nmodel = "m1-model"\n'
        f'base_url = "{base_url}/v1"\napi_key_env = "EVALTALLY_TEST_KEY"\n'
        "[models.params]\nmax_tokens = 32\n"
        '[[benchmarks]]\nkind = "verified"\nitems = 6\ntimeout_s = 1.0\n'
    )
    return path


def _verdicts(run_dir: Path, out: Path) -> dict[str, Any]:
    result = tally_kinds("export", str(run_dir), "-o", str(out))
    assert result.returncode == 0, result.stderr
    rows = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    return {r["item_id"]: r["verification"] for r in rows}


def test_verdicts_are_recorded_verified_and_regraded_offline(
    tmp_path: Path, mock_process: Any
) -> None:
    mock = mock_process("--seed", "11")
    run = tally_kinds("run", str(_config(tmp_path, mock.base_url)))
    assert run.returncode == 0, run.stderr
    assert "verified this session: passed" in run.stdout
    run_dir = tmp_path / "runs" / "v"
    verdicts = _verdicts(run_dir, tmp_path / "a.jsonl")
    for item in ("v0", "v1", "v2"):
        v = verdicts[item]
        assert v["status"] in ("passed", "failed") and v["reason"] is None
        assert (int(v["detail"]["mock"], 16) % 2 == 0) == (v["status"] == "passed")
        assert v["verifier"] == "kinds_kit:check"
    assert verdicts["v3"]["status"] == "error"
    assert verdicts["v3"]["reason"] == "the check raised ValueError('no oracle for v3')"
    assert verdicts["v4"] == {
        "status": "error",
        "detail": None,
        "reason": "timed out after 1s",
        "verifier": "kinds_kit:check",
    }
    assert verdicts["v5"]["status"] == "error"
    assert verdicts["v5"]["reason"] == "the verification process died (exit status 3)"
    assert tally_kinds("verify", str(run_dir)).returncode == 0

    requests = mock.stats()["total"]
    regraded = tally_kinds("regrade", str(run_dir))
    assert regraded.returncode == 0, regraded.stderr
    assert "6 answers verified again" in regraded.stdout and "0 verdicts changed" in regraded.stdout
    assert mock.stats()["total"] == requests  # no model was asked anything
    assert _verdicts(run_dir, tmp_path / "b.jsonl") == verdicts
    db = sqlite3.connect(run_dir / "ledger.sqlite", isolation_level=None)
    try:
        assert db.execute("SELECT count(*) FROM verifications").fetchone()[0] == 12
        # The verdicts' hash chain is checked like every other table's.
        db.execute("DROP TRIGGER verifications_no_update")
        db.execute("UPDATE verifications SET reason = 'forged' WHERE seq = 4")
    finally:
        db.close()
    tampered = tally_kinds("verify", str(run_dir))
    assert tampered.returncode == 4
    assert "verifications seq 4" in tampered.stderr and "was edited" in tampered.stderr

    report = tally_kinds("report", str(run_dir), "--resamples", "0")
    assert report.returncode == 0, report.stderr
    data = orjson.loads((run_dir / "report.json").read_bytes())
    assert sum(data["sections"]["verified"]["counts"].values()) == 6


def test_a_ledger_of_the_previous_release_upgrades_in_place(tmp_path: Path) -> None:
    run_dir = tmp_path / "v1run"
    shutil.copytree(FIXTURE, run_dir)
    before = tally_kinds("verify", str(run_dir))
    assert before.returncode == 0, before.stderr
    assert "schema version 1" in before.stdout
    resumed = tally_kinds("resume", str(run_dir))  # every call is answered: nothing is sent
    assert resumed.returncode == 0, resumed.stderr
    assert "planned calls: 3 (0 new this session)" in resumed.stdout
    db = sqlite3.connect(run_dir / "ledger.sqlite")
    try:
        assert [v for (v,) in db.execute("SELECT version FROM migrations")] == [
            m.version for m in MIGRATIONS
        ]
    finally:
        db.close()
    after = tally_kinds("verify", str(run_dir))
    assert after.returncode == 0, after.stderr
    assert "schema version" not in after.stdout
    assert set(_verdicts(run_dir, tmp_path / "e.jsonl").values()) == {None}
