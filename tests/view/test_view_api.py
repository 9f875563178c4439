"""`tally view`'s JSON API and its safety rules, over real runs and a real server process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
from view_testkit import XSS, ViewProcess, start_view, stop, xss_answers, xss_config

from testkit import REPO, exported, tally

STATIC = REPO / "src" / "evaltally" / "view" / "static"


def test_overview_counts_are_tally_status_counts(
    cte_run: Path, view_server: Callable[..., ViewProcess]
) -> None:
    view = view_server(cte_run)
    data = view.api("/api/runs/demo-small/overview")
    status = orjson.loads(tally("status", str(cte_run), "--json").stdout)
    assert data["totals"] == status["overall"]
    assert data["totals"]["planned"] == data["totals"]["ok"] == 480
    assert {lane["model"]: lane["counts"] for lane in data["lanes"]} == status["by_model"]
    assert data["live"] is None
    assert data["progress"]["done"] == 480
    assert {(c["model"], c["benchmark"]) for c in data["cells"]} == {
        ("replay", "cte"),
        ("copy_last", "cte"),
    }
    facets = view.api("/api/runs/demo-small/facets")
    assert facets["protocols"] == ["answers_revealed", "free_rollout", "no_feedback"]


def _walk(view: ViewProcess, query: str, key: str, start: str | None) -> list[list[int]]:
    pages: list[list[int]] = []
    cursor = start
    while True:
        suffix = f"&{key}={cursor}" if cursor is not None else ""
        page = view.api(f"/api/runs/demo-small/calls?limit=70{query}{suffix}")
        pages.append([c["seq"] for c in page["calls"]])
        cursor = page["next" if key == "after" else "prev"]
        if cursor is None:
            return pages


def test_keyset_pages_visit_every_call_once_both_ways(
    cte_run: Path, view_server: Callable[..., ViewProcess]
) -> None:
    view = view_server(cte_run)
    forward = _walk(view, "", "after", None)
    seqs = [s for page in forward for s in page]
    assert seqs == list(range(1, 481))
    assert [len(p) for p in forward] == [70] * 6 + [60]
    # Back from the last page, the same pages in reverse.
    backward = _walk(view, "", "before", str(forward[-1][0]))
    assert backward == forward[-2::-1]


def test_most_recent_first_pages_walk_the_answers_newest_first(
    cte_run: Path, view_server: Callable[..., ViewProcess]
) -> None:
    view = view_server(cte_run)
    forward = _walk(view, "&order=recent", "after", None)
    keys = [k for page in forward for k in page]
    assert len(keys) == len(set(keys)) == 480
    first = view.api("/api/runs/demo-small/calls?limit=480&order=recent")["calls"]
    assert [c["key"] for c in first] == sorted((c["key"] for c in first), reverse=True)
    backward = _walk(view, "&order=recent", "before", str(first[-1]["key"]))
    # Back from the oldest answer: every newer call once, ending on the newest.
    assert sum(len(p) for p in backward) == 479 and backward[-1][0] == forward[0][0]
    runs = view.api("/api/runs")
    assert [(r["state"], r["planned"], r["done"]) for r in runs] == [("finished", 480, 480)]


def test_filters_select_exactly_the_matching_calls(
    cte_run: Path, view_server: Callable[..., ViewProcess], tmp_path: Path
) -> None:
    view = view_server(cte_run)
    export = tmp_path / "e.jsonl"
    rows = exported(cte_run, export)

    def ids(query: str) -> set[str]:
        page = view.api(f"/api/runs/demo-small/calls?limit=500&{query}")
        assert page["next"] is None
        return {c["call_id"] for c in page["calls"]}

    expect = {
        r["call_id"] for r in rows if r["model"] == "copy_last" and r["protocol"] == "free_rollout"
    }
    assert ids("model=copy_last&protocol=free_rollout&status=ok") == expect
    item = rows[0]["item_id"]
    assert ids(f"item={item}&benchmark=cte") == {r["call_id"] for r in rows if r["item_id"] == item}
    word = '"error"'
    found = ids(f"q={quote(word)}")
    assert found == {r["call_id"] for r in rows if word in (r["raw_text"] or "")}
    assert 0 < len(found) < 480
    assert ids("status=failed") == set()
    assert ids("q=" + quote("100%_no_such")) == set()  # LIKE wildcards are literal

    status, _, body = view.get("/api/runs/demo-small/calls?status=exploded")
    assert status == 400 and "unknown status 'exploded'" in body["error"]
    status, _, body = view.get("/api/runs/demo-small/calls?after=abc")
    assert status == 400 and "after" in body["error"]


def test_one_free_rollout_call_shows_where_its_own_answers_entered(
    cte_run: Path, view_server: Callable[..., ViewProcess]
) -> None:
    view = view_server(cte_run)
    page = view.api("/api/runs/demo-small/calls?model=replay&protocol=free_rollout&limit=40")
    call = next(c for c in page["calls"] if c["step"] == 25)
    detail = view.api(f"/api/runs/demo-small/calls/{call['call_id']}")
    chain_ids = {s["step"]: s["call_id"] for s in detail["chain"]}
    assert sorted(chain_ids) == list(range(40))
    # The last 20 history lines are the model's own predictions of steps 5..24.
    assert [f["step"] for f in detail["fed_back"]] == list(range(5, 25))
    assert all(f["call_id"] == chain_ids[f["step"]] for f in detail["fed_back"])
    user = detail["request"]["messages"][-1]
    tagged = [p["step"] for p in user["parts"] if "step" in p]
    assert tagged == list(range(5, 25))  # in prompt order, each once
    text = "".join(p["text"] for p in user["parts"])
    assert "## Call history" in text
    assert detail["record"]["status"] == "ok"
    assert detail["oracle"]["future_index"] == 25 and "target" in detail["oracle"]
    assert [a["state"] for a in detail["attempts"]] == ["answered"]
    # An independent (answers_revealed) call shows none of its own answers.
    other = view.api("/api/runs/demo-small/calls?protocol=answers_revealed&limit=1")["calls"][0]
    assert view.api(f"/api/runs/demo-small/calls/{other['call_id']}")["fed_back"] == []


def test_serves_nothing_outside_the_run_directories(
    cte_run: Path, view_server: Callable[..., ViewProcess], tmp_path: Path
) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG not yours")
    link = cte_run / "link.png"
    link.symlink_to(secret)
    try:
        view = view_server(cte_run)
        ok, headers, png = view.get("/api/runs/demo-small/plots/vm_by_index.png")
        assert ok == 200 and headers["Content-Type"] == "image/png" and png[:4] == b"\x89PNG"
        for path in (
            "/api/runs/demo-small/plots/link.png",
            "/api/runs/demo-small/plots/ledger.sqlite",
            "/api/runs/demo-small/plots/..%2F..%2Fsecret.png",
            "/api/runs/demo-small/plots/%2E%2E%2Fconfig.toml",
            "/api/runs/nope/overview",
            "/api/runs/..%2F..%2Fetc/overview",
            "/static/..%2F..%2F..%2Fpyproject.toml",
            "/static/index.html.bak",
            "/../pyproject.toml",
        ):
            status, _, body = view.get(path)
            assert status == 404, (path, status)
            assert b"not yours" not in (body if isinstance(body, bytes) else orjson.dumps(body))
    finally:
        link.unlink()


def test_security_headers_and_host_check(
    cte_run: Path, view_server: Callable[..., ViewProcess]
) -> None:
    view = view_server(cte_run)
    for path in ("/", "/static/app.js", "/api/runs"):
        status, headers, _ = view.get(path)
        assert status == 200
        csp = headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert headers["X-Content-Type-Options"] == "nosniff"
    port = view.url.rsplit(":", 1)[1]
    status, _, body = view.get("/api/runs", {"Host": f"attacker.example:{port}"})
    assert status == 403 and "not served here" in body["error"]
    assert view.get("/api/runs", {"Host": f"localhost:{port}"})[0] == 200


def test_page_script_never_parses_markup() -> None:
    script = (STATIC / "app.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink
    assert "<script>" not in (STATIC / "index.html").read_text().replace(
        '<script src="/static/app.js"></script>', ""
    )


def test_attempts_429_retry_after_and_lane_counts(
    tmp_path: Path, mock_process: Any, view_server: Callable[..., ViewProcess]
) -> None:
    mock = mock_process("--fault", "429:1:body:0.05", "--answers-file", str(xss_answers(tmp_path)))
    config = xss_config(tmp_path, mock.base_url)
    assert tally("run", str(config)).returncode == 0
    run_dir = tmp_path / "runs" / "xss"
    view = view_server(run_dir)
    lane = view.api("/api/runs/xss/overview")["lanes"][0]
    assert lane["attempts"] == {"attempts": 4, "retried": 2, "rate_limited": 2, "interrupted": 0}
    page = view.api("/api/runs/xss/calls?q=" + quote("<script>"))
    assert len(page["calls"]) == 1 and page["calls"][0]["answer"] == f"here: {XSS}"
    detail = view.api(f"/api/runs/xss/calls/{page['calls'][0]['call_id']}")
    first, second = detail["attempts"]
    assert (first["http_status"], first["error_class"], first["retry_after_s"]) == (
        429,
        "http_429",
        0.05,
    )
    assert first["state"] == "error" and second["state"] == "answered"
    assert second["usage"]["output_tokens"] > 0 and second["latency_ms"] is not None
    assert detail["record"]["raw_text"] == f"here: {XSS}"
    assert detail["request"]["messages"] == [
        {"role": "user", "parts": [{"text": f"xss please {XSS}"}]}
    ]
    # The credential never reaches the page: not in any body the API serves.
    for path in ("/api/runs/xss/overview", f"/api/runs/xss/calls/{detail['record']['call_id']}"):
        assert b"DO-NOT-LEAK" not in orjson.dumps(view.api(path))


def test_report_page_hints_when_no_report_was_written(
    tmp_path: Path, mock_process: Any, view_server: Callable[..., ViewProcess]
) -> None:
    mock = mock_process()
    assert tally("run", str(xss_config(tmp_path, mock.base_url))).returncode == 0
    view = view_server(tmp_path / "runs" / "xss")
    report = view.api("/api/runs/xss/report")
    assert report["blocks"] is None and "tally report" in report["hint"]


def test_refuses_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    result = tally("view", str(tmp_path), "--port", "0")
    assert result.returncode == 2
    assert "no ledger.sqlite here" in result.stderr and str(tmp_path) in result.stderr


def test_explicit_host_warns(cte_run: Path, tmp_path: Path) -> None:
    view = start_view(tmp_path / "ready", cte_run, extra=("--host", "0.0.0.0"))
    try:
        assert view.url.startswith("http://0.0.0.0:")
        assert view.get("/api/runs")[0] == 200
    finally:
        stderr = stop(view.proc)
    assert "warning: listening on 0.0.0.0" in stderr
    assert view.proc.returncode == 0
