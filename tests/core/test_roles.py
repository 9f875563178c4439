"""A two-role benchmark (observer, then judge) against two mock endpoints: each step on its own
model's lane, the judge's prompt built from the observer's recorded answer, per-lane limits
held at each endpoint, and a kill -9 then resume exporting what an uninterrupted run does."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from evaltally.ledger import unpack_body
from kinds_kit import LAUNCH, env, tally_kinds
from testkit import mock_model

VOLATILE = {"latency_ms", "attempts"}
ITEMS = 10
OBSERVER_CONCURRENCY = 3
JUDGE_CONCURRENCY = 2


def _config(tmp_path: Path, name: str, observers_url: str, judge_url: str) -> Path:
    observer = f"concurrency = {OBSERVER_CONCURRENCY}\n"
    judge = f"concurrency = {JUDGE_CONCURRENCY}\nrpm = 600\n"
    text = (
        f'[run]\nname = "{name}"\nruns_dir = "runs"\n\n'
        + mock_model("obs-a", observers_url, observer)
        + mock_model("obs-b", observers_url, observer)
        + mock_model("jud", judge_url, judge)
        + f'[[benchmarks]]\nkind = "observe_judge"\nitems = {ITEMS}\n'
        + '[benchmarks.roles]\nobserver = ["obs-a", "obs-b"]\njudge = ["jud"]\n'
    )
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def _export(run_dir: Path, out: Path) -> list[dict[str, Any]]:
    result = tally_kinds("export", str(run_dir), "-o", str(out))
    assert result.returncode == 0, result.stderr
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]


def _stable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]


def _judged(db_path: Path) -> int:
    """Judge steps with a final outcome so far."""
    if not db_path.exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            row = db.execute(
                "SELECT count(*) FROM outcomes o JOIN planned p USING (call_id)"
                " WHERE p.step = 1 AND o.status = 'ok'"
            ).fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return 0
    return int(row[0])


def _limits_held(observers: dict[str, Any], judge: dict[str, Any]) -> None:
    # Each endpoint got only its own role's steps, within its lanes' limits.
    assert observers["by_model"] == {"obs-a-model": ITEMS, "obs-b-model": ITEMS}
    assert judge["by_model"] == {"jud-model": 2 * ITEMS}
    assert observers["max_in_flight"] <= 2 * OBSERVER_CONCURRENCY
    assert judge["max_in_flight"] <= JUDGE_CONCURRENCY
    assert judge["rate_limited"] == 0


def test_observer_then_judge_each_on_its_lane_and_resume_is_exact(
    tmp_path: Path, mock_process: Any
) -> None:
    observers = mock_process("--latency-ms", "40", "--seed", "3")
    judge = mock_process("--latency-ms", "80", "--rpm", "1200", "--seed", "4")

    clean = _config(tmp_path, "clean", observers.base_url, judge.base_url)
    done = tally_kinds("run", str(clean))
    assert done.returncode == 0, done.stderr
    _limits_held(observers.stats(), judge.stats())
    rows = _export(tmp_path / "runs" / "clean", tmp_path / "clean.jsonl")
    assert len(rows) == 4 * ITEMS and {r["status"] for r in rows} == {"ok"}
    by_step = {(r["chain_id"], r["step"]): r for r in rows}
    for (chain, step), row in by_step.items():
        assert row["benchmark_kind"] == "observe_judge"
        if step == 0:
            assert row["role"] == "observer" and row["model"] in ("obs-a", "obs-b")
            assert row["parse_path"] == "observer-text"
        else:
            assert row["role"] == "judge" and row["model"] == "jud"
            assert row["parse_path"] == "judge-json" and "mock" in row["parsed"]
            assert by_step[(chain, 0)]["item_id"] == row["item_id"]
    db = sqlite3.connect(tmp_path / "runs" / "clean" / "ledger.sqlite")
    try:
        sent = db.execute(
            "SELECT p.chain_id, a.request_body FROM attempts a JOIN planned p USING (call_id)"
            " WHERE a.kind = 'start' AND p.step = 1"
        ).fetchall()
    finally:
        db.close()
    assert len(sent) == 2 * ITEMS
    for chain, body in sent:
        prompt = orjson.loads(unpack_body(body))["messages"][-1]["content"]
        assert f"<<{by_step[(chain, 0)]['raw_text']}>>" in prompt

    observers.reset_stats()
    judge.reset_stats()
    killed = _config(tmp_path, "killed", observers.base_url, judge.base_url)
    run_dir = tmp_path / "runs" / "killed"
    proc = subprocess.Popen(
        [sys.executable, *LAUNCH, "run", str(killed)],
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if _judged(run_dir / "ledger.sqlite") >= 4:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _judged(run_dir / "ledger.sqlite") < 2 * ITEMS, "the run ended before the kill"
    resumed = tally_kinds("resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    assert tally_kinds("verify", str(run_dir)).returncode == 0
    assert _stable(_export(run_dir, tmp_path / "killed.jsonl")) == _stable(rows)
    # Only the calls cut off by the kill went out twice; no endpoint saw another role's step.
    o, j = observers.stats(), judge.stats()
    assert set(o["by_model"]) == {"obs-a-model", "obs-b-model"}
    assert set(j["by_model"]) == {"jud-model"}
    assert j["max_in_flight"] <= JUDGE_CONCURRENCY and j["rate_limited"] == 0


def test_models_reaching_one_endpoint_share_its_lane(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process("--latency-ms", "60")
    (tmp_path / "items.jsonl").write_text(
        "".join(
            orjson.dumps(
                {"id": f"q{i}", "messages": [{"role": "user", "content": f"q {i}"}]}
            ).decode()
            + "\n"
            for i in range(12)
        )
    )
    same = f'model = "shared-model"\nbase_url = "{mock.base_url}/v1"\n'
    config = tmp_path / "shared.toml"
    config.write_text(
        '[run]\nname = "shared"\nruns_dir = "runs"\n'
        + "".join(
            f'[[models]]\nkey = "{key}"\nprovider = "openai"\n{same}'
            f'api_key_env = "EVALTALLY_TEST_KEY"\n[models.params]\ntemperature = {t}\n'
            "[models.limits]\nconcurrency = 2\n"
            for key, t in (("cold", 0.0), ("warm", 0.5))
        )
        + '[[benchmarks]]\nkind = "prompts"\npath = "items.jsonl"\n'
    )
    result = tally_kinds("run", str(config))
    assert result.returncode == 0, result.stderr
    assert "cold+warm: 24 finished" in result.stdout
    stats = mock.stats()
    assert stats["total"] == 24 and stats["max_in_flight"] <= 2


@pytest.mark.parametrize(
    ("roles", "key", "reason"),
    [
        ("", "benchmarks[0].roles", "is required"),
        ('observer = ["obs-a"]\n', "benchmarks[0].roles", "binds no model to role(s) judge"),
        ('observer = ["obs-a"]\njudge = ["nobody"]\n', "roles.judge", "unknown model"),
        ('observer = ["obs-a"]\njudge = ["jud"]\nreferee = ["jud"]\n', "roles.referee", "role"),
    ],
)
def test_role_bindings_are_checked_at_plan_time(
    tmp_path: Path, roles: str, key: str, reason: str
) -> None:
    text = _config(tmp_path, "bad", "http://127.0.0.1:9", "http://127.0.0.1:9").read_text()
    text = text.split("[benchmarks.roles]")[0] + (f"[benchmarks.roles]\n{roles}" if roles else "")
    path = tmp_path / "bad.toml"
    path.write_text(text)
    result = tally_kinds("plan", str(path))
    assert result.returncode == 2
    assert str(path) in result.stderr and key in result.stderr and reason in result.stderr
    assert "Traceback" not in result.stderr


def test_plan_lists_each_role_model(tmp_path: Path) -> None:
    path = _config(tmp_path, "p", "http://127.0.0.1:9", "http://127.0.0.1:9")
    result = tally_kinds("plan", str(path))
    assert result.returncode == 0, result.stderr
    assert f"total planned calls: {4 * ITEMS}" in result.stdout
    lines = [line for line in result.stdout.splitlines() if "observe_judge" in line]
    assert len(lines) == 3 and sum("judge" in line and "jud " in line for line in lines) == 1
