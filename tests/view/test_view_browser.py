"""`tally view` in a real headless Chromium: the pages a person uses, the XSS case, and a page
left open on a run in progress (it refreshes itself; the run finishes and verifies)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from view_testkit import XSS, ViewProcess, screenshot, xss_answers, xss_config

from testkit import tally, tally_background, write_config, write_items


def test_overview_of_a_finished_run(
    cte_run: Path, view_server: Callable[..., ViewProcess], page: Any, tmp_path: Path
) -> None:
    view = view_server(cte_run)
    page.goto(view.url + "/")
    # One run served: the page goes straight to its overview.
    page.wait_for_selector("table.lanes")
    assert page.url.endswith("#/r/demo-small")
    assert page.text_content("#live-badge") == "finished (the last session closed)"
    assert "480 of 480 planned calls finished (100.0%)" in page.text_content("#progress-text")
    lanes = page.locator("table.lanes tbody tr")
    assert lanes.count() == 2
    assert {lanes.nth(i).locator("td").first.text_content() for i in range(2)} == {
        "replay",
        "copy_last",
    }
    total = page.locator("table.cells tr.total td")
    assert [total.nth(i).text_content() for i in range(3)] == ["all", "", "480"]
    screenshot(page, "view-overview", tmp_path)


def test_filter_the_calls_and_open_one(
    cte_run: Path, view_server: Callable[..., ViewProcess], page: Any, tmp_path: Path
) -> None:
    view = view_server(cte_run)
    page.goto(view.url + "/#/r/demo-small/calls")
    page.wait_for_selector("table.calls")
    assert page.locator("table.calls tbody tr").count() == 50
    page.select_option("select[name=model]", "copy_last")
    page.select_option("select[name=protocol]", "free_rollout")
    page.select_option("select[name=status]", "ok")
    page.click("form#filters button[type=submit]")
    page.wait_for_function("location.hash.includes('protocol=free_rollout')")
    page.wait_for_function(
        "[...document.querySelectorAll('table.calls tbody tr')]"
        ".every(r => r.children[4].textContent === 'free_rollout')"
    )
    rows = page.locator("table.calls tbody tr")
    assert rows.count() == 50
    assert {rows.nth(i).locator("td").nth(2).text_content() for i in range(50)} == {"copy_last"}
    screenshot(page, "view-calls", tmp_path)
    page.click("#next")
    page.wait_for_function("location.hash.includes('after=')")
    page.wait_for_selector("#prev")
    assert page.locator("table.calls tbody tr").count() == 30  # 80 free-rollout calls in all
    # Open step 25 of a chain: the prompt shows the model's own answers of steps 5..24.
    page.locator("table.calls tbody tr", has_text="free_rollout").filter(
        has=page.locator("td:nth-child(8)", has_text="25")
    ).first.locator("td a").click()
    page.wait_for_selector("text=Chain (40 steps)")
    assert page.locator("a.fed").count() == 20
    assert page.text_content("#fed-note").startswith("Highlighted: the model's own")
    assert page.locator("ol.chain li.current").text_content().startswith("step 25 (this call)")
    screenshot(page, "view-call", tmp_path)
    page.locator("a.fed").first.scroll_into_view_if_needed()
    screenshot(page, "view-call-rollout", tmp_path)
    # A highlighted answer links to the call that produced it.
    page.locator("a.fed").first.click()
    page.wait_for_selector("ol.chain li.current >> text=step 5 (this call)")


def test_report_page_shows_tables_and_plots(
    cte_run: Path, view_server: Callable[..., ViewProcess], page: Any, tmp_path: Path
) -> None:
    view = view_server(cte_run)
    page.goto(view.url + "/#/r/demo-small/report")
    page.wait_for_selector("table.report")
    assert page.locator("h1", has_text="Evaluation report").count() == 1
    assert page.locator("h2", has_text="CTE-Bench").count() == 1
    assert page.locator("h3", has_text="Headline").count() == 1
    assert page.locator("table.report").count() >= 4
    images = page.locator("figure img")
    assert images.count() == 2
    page.wait_for_function(
        "[...document.querySelectorAll('figure img')].every(i => i.complete && i.naturalWidth > 0)"
    )
    screenshot(page, "view-report", tmp_path, full_page=True)


def test_markup_in_answers_ids_and_prompts_stays_text(
    tmp_path: Path,
    mock_process: Any,
    view_server: Callable[..., ViewProcess],
    page: Any,
) -> None:
    mock = mock_process("--answers-file", str(xss_answers(tmp_path)))
    assert tally("run", str(xss_config(tmp_path, mock.base_url))).returncode == 0
    view = view_server(tmp_path / "runs" / "xss")
    page.goto(view.url + "/#/r/xss/calls?q=" + "%3Cscript%3E")
    page.wait_for_selector("table.calls td.answer")
    assert page.text_content("table.calls td.answer") == f"here: {XSS}"
    assert page.locator("table.calls tbody tr").count() == 1
    page.locator("table.calls tbody tr td a").first.click()
    page.wait_for_selector("#raw-answer")
    assert page.text_content("#raw-answer") == f"here: {XSS}"
    assert XSS in page.text_content(".message.role-user pre")
    assert '<img src=x onerror="window.__pwned = 3">' in page.text_content("table.facts")
    time.sleep(0.5)  # an injected onerror would fire on the failed image load by now
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main img, main script").count() == 0
    screenshot(page, "view-xss", tmp_path)


def _view_when_planned(run_dir: Path, view_server: Callable[..., ViewProcess]) -> ViewProcess:
    """A view of a run a background `tally run` is starting, once its ledger exists."""
    deadline = time.monotonic() + 30
    while not (run_dir / "ledger.sqlite").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return view_server(run_dir)


def test_a_page_left_open_on_a_running_sweep(
    tmp_path: Path,
    mock_process: Any,
    view_server: Callable[..., ViewProcess],
    page: Any,
) -> None:
    mock = mock_process("--latency-ms", "250")
    write_items(tmp_path / "items.jsonl", 40)
    config = write_config(tmp_path, mock.base_url, name="live", limits="concurrency = 2")
    run_dir = tmp_path / "runs" / "live"
    sweep = tally_background("run", str(config))
    try:
        view = _view_when_planned(run_dir, view_server)
        page.goto(view.url + "/#/r/live")
        page.wait_for_selector("#live-badge.live")
        first = page.text_content("#progress-text")
        # No navigation: the page refreshes itself while the session runs.
        page.wait_for_function(
            f"document.querySelector('#progress-text').textContent !== {first!r}"
        )
        assert "calls/min" in page.text_content("#progress-text")
        screenshot(page, "view-overview-live", tmp_path)
        _, err = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.communicate()
    assert sweep.returncode == 0, err.decode()
    page.wait_for_selector("#live-badge.idle", timeout=30_000)
    assert "40 of 40 planned calls finished" in page.text_content("#progress-text")
    verify = tally("verify", str(run_dir))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert mock.stats()["total"] == 40


def test_scores_while_a_scored_sweep_runs_then_interrupted(
    tmp_path: Path,
    mock_process: Any,
    view_server: Callable[..., ViewProcess],
    page: Any,
) -> None:
    """Scores appear and grow as answers arrive; the calls table marks each answer right or
    wrong, newest first; after a kill -9 the page says the run is interrupted."""
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"match": "even", "answer": "yes"}\n{"match": "odd", "answer": "maybe"}\n')
    mock = mock_process("--latency-ms", "150", "--answers-file", str(answers))
    items = [
        {
            "id": f"q{i}",
            "messages": [{"role": "user", "content": f"{'even' if i % 2 == 0 else 'odd'} {i}"}],
            "target": "yes",
        }
        for i in range(60)
    ]
    (tmp_path / "items.jsonl").write_text("\n".join(orjson.dumps(i).decode() for i in items))
    config = write_config(tmp_path, mock.base_url, name="scored", limits="concurrency = 2")
    config.write_text(config.read_text() + 'scorer = "exact"\n')
    run_dir = tmp_path / "runs" / "scored"
    sweep = tally_background("run", str(config))
    try:
        view = _view_when_planned(run_dir, view_server)
        page.goto(view.url + "/#/r/scored")
        page.wait_for_selector("table.scores")
        cell = "document.querySelector('table.scores tbody tr td:nth-child(4)').textContent"
        first = page.evaluate(cell)
        # No navigation: the scored count grows while the session runs.
        page.wait_for_function(f"{cell} !== {first!r} && !{cell}.startsWith('0 ')")
        page.goto(view.url + "/#/r/scored/calls?order=recent")
        page.wait_for_selector("table.calls td.score")
        marks = page.locator("table.calls td.score").all_text_contents()
        assert set(marks) <= {"✓ correct", "✗ wrong"} and marks
        # Newest first: the page's rows are in descending answer order (the page key).
        data = page.evaluate("fetch('/api/runs/scored/calls?order=recent').then((r) => r.json())")
        keys = [c["key"] for c in data["calls"]]
        assert keys == sorted(keys, reverse=True)
        screenshot(page, "view-calls-scored", tmp_path)
    finally:
        sweep.send_signal(signal.SIGKILL)
        sweep.communicate()
    page.goto(view.url + "/#/r/scored")
    page.wait_for_selector("#live-badge.st-interrupted")
    assert "resume it: tally resume" in page.text_content("#live-badge")
    assert "tally resume" in page.text_content("#live-badge")
