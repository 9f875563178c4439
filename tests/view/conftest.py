"""Fixtures for `tally view`: a finished run made once per session, the server as a real
subprocess, and a real headless Chromium (Debian's package) driven by Playwright."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from view_testkit import ViewProcess, chromium_path, cte_config, start_view, stop

from testkit import tally


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium for one test module. Not for the session: Playwright's sync API keeps
    its own event loop registered as running in the main thread while it is open, and every
    async test collected after it would then fail ("Cannot run the event loop while another
    loop is running")."""
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=executable, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page; the test fails on any uncaught script error or console error.

    The page's Content-Security-Policy is bypassed: Playwright evaluates its waits and probes
    as strings, which the policy forbids, and the XSS test must show that the page keeps
    markup inert by itself (the policy is a second line of defence, checked in the API tests).
    """
    context = browser.new_context(viewport={"width": 1400, "height": 900}, bypass_csp=True)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    pg.set_default_timeout(20_000)
    yield pg
    context.close()
    assert not errors, errors


@pytest.fixture
def view_server(tmp_path: Path) -> Iterator[Callable[..., ViewProcess]]:
    """Factory: `tally view RUN ... --port 0` in its own process, stopped at teardown."""
    procs: list[ViewProcess] = []

    def start(*run_dirs: Path, extra: tuple[str, ...] = ()) -> ViewProcess:
        view = start_view(tmp_path / f"view-ready-{len(procs)}", *run_dirs, extra=extra)
        procs.append(view)
        return view

    yield start
    for view in procs:
        stop(view.proc)


@pytest.fixture(scope="session")
def cte_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished demo-like run with its report written (shared: tests only read it)."""
    root = tmp_path_factory.mktemp("cte-run")
    result = tally("run", str(cte_config(root)))
    assert result.returncode == 0, result.stderr
    run_dir = root / "runs" / "demo-small"
    report = tally("report", str(run_dir), "--resamples", "20")
    assert report.returncode == 0, report.stderr
    return run_dir
