"""Issue 23, item 8: `tally view` showed no verification verdict; `?after=<2^64>` in the view and
`tally fork -o <file>` ended in tracebacks; `tally fork --name ../x` wrote outside the parent's
directory."""

from __future__ import annotations

import signal
import sqlite3
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest
from ledger_hostile_kit import append_row

from evaltally.view.call import call_detail
from evaltally.view.runs import open_runs
from testkit import tally, tally_background, write_config, write_items


@pytest.fixture
def finished_run(tmp_path: Path, mock_process: Any) -> Path:
    mock = mock_process()
    write_items(tmp_path / "items.jsonl", 2, turns=2)
    assert tally("run", str(write_config(tmp_path, mock.base_url, name="p"))).returncode == 0
    return tmp_path / "runs" / "p"


def test_the_view_shows_a_calls_verdict(finished_run: Path) -> None:
    conn = sqlite3.connect(finished_run / "ledger.sqlite")
    (call_id,) = conn.execute("SELECT call_id FROM outcomes WHERE status = 'ok'").fetchone()
    detail = {"covered": [1, 2], "target": 3}
    append_row(
        conn,
        "verifications",
        call_id=call_id,
        status="failed",
        detail_json=orjson.dumps(detail).decode(),
        reason="branch not covered",
        verifier="dexbench-sandbox",
        at=time.time(),
    )
    conn.commit()
    conn.close()
    shown = call_detail(open_runs([finished_run])["p"], call_id)
    assert shown is not None
    assert shown["record"]["verification"] == {
        "status": "failed",
        "detail": detail,
        "reason": "branch not covered",
        "verifier": "dexbench-sandbox",
    }


def test_a_huge_page_key_is_a_400(finished_run: Path, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    view = tally_background("view", str(finished_run), "--port", "0", "--ready-file", str(ready))
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert view.poll() is None and time.monotonic() < deadline, "tally view did not start"
            time.sleep(0.05)
        url = ready.read_text().strip() + "/api/runs/p/calls?"
        statuses = {}
        for query in (f"after={2**64}", f"before={2**63}", "after=-5", f"limit={2**64}"):
            try:
                with urllib.request.urlopen(url + query, timeout=30) as resp:
                    statuses[query] = resp.status
            except urllib.error.HTTPError as exc:
                statuses[query] = exc.code
                assert "page key" in orjson.loads(exc.read())["error"]
    finally:
        view.send_signal(signal.SIGTERM)
        _, err = view.communicate(timeout=30)
    assert statuses == dict.fromkeys(statuses, 400), statuses
    assert b"Traceback" not in err


def test_fork_refuses_a_file_for_out_and_a_path_for_name(finished_run: Path) -> None:
    export = finished_run.parent / "e.jsonl"
    assert tally("export", str(finished_run), "-o", str(export)).returncode == 0
    chain = orjson.loads(export.read_bytes().splitlines()[0])["chain_id"]
    base = ("fork", str(finished_run), "--chain", chain, "--at", "1", "--replays", "2")
    taken = finished_run.parent / "a-file"
    taken.write_text("mine")
    for extra, reason in (
        (("-o", str(taken)), "exists and is not a directory"),
        (("--name", "../escaped"), "must be a plain directory name"),
    ):
        done = tally(*base, *extra)
        assert done.returncode == 2, done.stderr
        assert reason in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert taken.read_text() == "mine"
    assert not (finished_run.parent.parent / "escaped").exists()
