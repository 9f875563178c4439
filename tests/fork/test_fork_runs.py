"""`tally fork` on a recorded prompts chain, through the real runner and a mock provider: the
replays' requests continue the parent's stored request bodies byte for byte, the new ledger
names its parent, the parent is only read, the report gives the entropy at the fork step, and a
parent whose data changed since is refused before anything is sent."""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from evaltally.ledger import latest_meta, unpack_body
from testkit import tally, write_config, write_items

# The mock's n-th answer to one request body is ANSWERS[n % 4]: the parent's step 2 got "x",
# the four replays of step 2 (the very same body) get y, x, z, x in some order.
ANSWERS = ["x", "y", "x", "z"]


def _bodies(run_dir: Path) -> dict[tuple[int, int], bytes]:
    """(sample, step) -> the request body its answered attempt sent."""
    conn = sqlite3.connect(f"file:{run_dir / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT p.sample, p.step, a.request_body FROM planned p JOIN outcomes o USING "
            "(call_id) JOIN attempts a ON a.call_id = p.call_id AND a.kind = 'start' "
            "AND a.request_hash = o.request_hash WHERE o.status = 'ok'"
        ).fetchall()
    finally:
        conn.close()
    return {(s, st): unpack_body(b) for s, st, b in rows}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _parent(tmp_path: Path, mock_process: Any) -> tuple[Path, Any, str]:
    script = tmp_path / "answers.jsonl"
    script.write_text(json.dumps({"match": "chain 0 turn 2", "answers": ANSWERS}) + "\n")
    mock = mock_process("--answers-file", str(script))
    write_items(tmp_path / "items.jsonl", 1, turns=4)
    config = write_config(tmp_path, mock.base_url, name="parent")
    assert tally("run", str(config)).returncode == 0
    export = tmp_path / "parent.jsonl"
    assert tally("export", str(tmp_path / "runs" / "parent"), "-o", str(export)).returncode == 0
    chain = orjson.loads(export.read_bytes().splitlines()[0])["chain_id"]
    return tmp_path / "runs" / "parent", mock, chain


def test_fork_replays_continue_the_recorded_prefix_byte_for_byte(
    tmp_path: Path, mock_process: Any
) -> None:
    parent, mock, chain = _parent(tmp_path, mock_process)
    ledger_before = _digest(parent / "ledger.sqlite")
    forked = tally("fork", str(parent), "--chain", chain[:8], "--at", "2", "--replays", "4")
    assert forked.returncode == 0, forked.stderr
    run_dir = tmp_path / "runs" / f"parent-fork-{chain[:8]}-at2"
    assert _digest(parent / "ledger.sqlite") == ledger_before
    assert tally("verify", str(parent)).returncode == 0

    meta = latest_meta(run_dir, "parents")["fork"][0]
    assert (meta["run"], meta["chain"], meta["at"], meta["kind"]) == (
        str(parent.resolve()), chain, 2, "prompts")  # fmt: skip
    parent_bodies, fork_bodies = _bodies(parent), _bodies(run_dir)
    assert len(fork_bodies) == 8  # 4 replays x steps 2 and 3 of the parent
    for replay in range(4):
        assert fork_bodies[(replay, 0)] == parent_bodies[(0, 2)]  # the recorded prefix, as sent
        sent = orjson.loads(fork_bodies[(replay, 1)])["messages"]
        recorded = orjson.loads(parent_bodies[(0, 3)])["messages"]
        assert sent[:5] == recorded[:5]  # turns 0-2 and the parent's answers to turns 0-1
    assert mock.stats()["total"] == 4 + 8  # the parent's 4 calls, then only the replays' own

    report = tally("report", str(run_dir))
    assert report.returncode == 0, report.stderr
    data = orjson.loads((run_dir / "report.json").read_bytes())
    (fork,) = data["sections"]["fork"]["forks"]
    s = fork["summary"]
    assert fork["parent_chain"] == chain and fork["at"] == 2
    assert s["buckets"] == {'"x"': 2, '"y"': 1, '"z"': 1} and s["recorded_bucket"] == '"x"'
    assert math.isclose(s["entropy"], -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25)))
    assert s["share_recorded_bucket"] == 0.5
    # A replay answering x sends the parent's step-3 request again and gets its answer.
    assert s["reproduced"] == 2 and s["final_distinct"] == 3
    assert s["outcome"]["n"] == 0  # prompts chains have no targets
    assert "Fork resampling" in report.stdout and "1.040" in report.stdout

    export = tmp_path / "fork.jsonl"
    assert tally("export", str(run_dir), "-o", str(export)).returncode == 0
    graded = tally("grade", str(export), "-o", str(tmp_path / "g"))
    assert graded.returncode == 0, graded.stderr
    assert (
        orjson.loads((tmp_path / "g" / "report.json").read_bytes())["sections"] == data["sections"]
    )
    again = tally("fork", str(parent), "--chain", chain, "--at", "2", "--replays", "4")
    assert again.returncode == 0, again.stderr  # the same command continues the same run
    assert tally("resume", str(run_dir)).returncode == 0
    assert mock.stats()["total"] == 12


def test_a_parent_whose_prompts_changed_is_refused_before_anything_is_sent(
    tmp_path: Path, mock_process: Any
) -> None:
    parent, mock, chain = _parent(tmp_path, mock_process)
    item = {"id": "c0", "turns": ["chain 0 turn 0", "edited turn 1", "chain 0 turn 2", "t3"]}
    (tmp_path / "items.jsonl").write_text(json.dumps(item) + "\n")
    forked = tally(
        "fork", str(parent), "--chain", chain, "--at", "2", "--replays", "2", "--name", "f"
    )
    assert forked.returncode == 2, forked.stderr
    assert f"chain {chain} step 1" in forked.stderr and "nothing was sent" in forked.stderr
    assert mock.stats()["total"] == 4
    assert not (tmp_path / "runs" / "f" / "ledger.sqlite").exists()


def test_fork_arguments_are_checked_with_the_key_named(tmp_path: Path, mock_process: Any) -> None:
    parent, _, chain = _parent(tmp_path, mock_process)
    beyond = tally("fork", str(parent), "--chain", chain, "--at", "4", "--replays", "2")
    assert beyond.returncode == 2 and "benchmarks[0].at: chain" in beyond.stderr
    unknown = tally("fork", str(parent), "--chain", "abcdef12", "--at", "1", "--replays", "2")
    assert unknown.returncode == 2 and "no chain id starts with 'abcdef12'" in unknown.stderr
    bad_bucket = tally("fork", str(parent), "--chain", chain, "--at", "1", "--replays", "2",
                       "--bucket", "a..b", "--name", "b")  # fmt: skip
    assert bad_bucket.returncode == 2 and "benchmarks[0].bucket" in bad_bucket.stderr
    not_a_run = tally("fork", str(tmp_path), "--chain", chain, "--at", "1", "--replays", "2")
    assert not_a_run.returncode == 2 and "not a run directory" in not_a_run.stderr


def test_a_fork_that_failed_to_start_can_be_started_again_with_other_arguments(
    tmp_path: Path, mock_process: Any
) -> None:
    parent, mock, chain = _parent(tmp_path, mock_process)
    args = ("fork", str(parent), "--chain", chain, "--name", "f", "--replays", "2", "--at")
    assert tally(*args, "9").returncode == 2  # no step 9: refused before a ledger exists
    assert tally(*args, "3").returncode == 0
    assert tally(*args, "1").returncode == 2  # now the run exists: other arguments are refused
    assert mock.stats()["total"] == 4 + 2
