"""A one-call `tally run` loads only what a run uses (issue 14's fixed cost, bench/fixed_cost.py).

Each module listed here cost every `tally run` its import time while the run never called it.
The guard is on what the run's process has loaded, not on a timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from testkit import FAKE_KEY, tally, write_config, write_items

# Loaded only by the commands (or the batch mode, or the terminal display) that need them.
NOT_IN_A_RUN = (
    "evaltally.mockserver",
    "evaltally.view",
    "evaltally.report",
    "evaltally.cli.batch",
    "evaltally.plan.batches",
    "evaltally.runner.batch.rounds",
    "evaltally.adapters.batch",
    "evaltally.cli.derived",
    "evaltally.benchmarks.cte.cli",
    "evaltally.benchmarks.ctxgap.cli",
    "evaltally.benchmarks.dexbench.cli",
    "evaltally.benchmarks.fork.cli",
    "evaltally.benchmarks.scae.cli",
    "rich.live",
    "rich.table",
    "matplotlib",
    "tiktoken",
    # typer 0.29 converts every CLI value through pydantic (60-100 ms of each command's
    # start-up); pyproject keeps typer below it.
    "pydantic",
)

# `tally ARGS` through the CLI app in this process, started as `tally` starts it (the collector
# paused, evaltally.cli.startup), then what the process holds into the file named by the first
# argument (`tally`'s own entry point ends the process with os._exit, before anything could be
# read).
PROBE = """
import gc, sys
from pathlib import Path
import orjson
out = Path(sys.argv.pop(1))
from evaltally.cli import startup
startup.begin()
from evaltally.cli.root import app
try:
    app()
except SystemExit as done:
    code = done.code
state = {"code": code, "gc": gc.isenabled(), "frozen": gc.get_freeze_count()}
out.write_bytes(orjson.dumps({**state, "modules": sorted(sys.modules)}))
"""


def _probe(args: list[str], tmp_path: Path) -> dict[str, Any]:
    """`tally ARGS` run in `tmp_path`: its exit status, its collector's state at the end, and
    the modules it had loaded."""
    out = tmp_path / "probe.json"
    env = {**os.environ, "EVALTALLY_TEST_KEY": FAKE_KEY}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert out.exists(), proc.stderr
    state: dict[str, Any] = orjson.loads(out.read_bytes())
    state["modules"] = set(state["modules"])
    return state


def _loaded(names: set[str], module: str) -> bool:
    return module in names or any(name.startswith(module + ".") for name in names)


def test_a_one_call_run_loads_no_module_it_does_not_use(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process()
    write_items(tmp_path / "items.jsonl", 1)
    config = write_config(tmp_path, mock.base_url)
    run = _probe(["run", str(config)], tmp_path)
    assert run["code"] == 0
    assert mock.stats()["total"] == 1
    names = run["modules"]
    assert "evaltally.run.session" in names and "aiohttp" in names  # it did run
    assert [m for m in NOT_IN_A_RUN if _loaded(names, m)] == []


def test_mounted_commands_are_listed_and_built_when_named(tmp_path: Path) -> None:
    listed = tally("--help")
    assert listed.returncode == 0, listed.stderr
    for name in ("fork", "mock-server", "cte", "ctxgap", "scae", "dex"):
        assert f" {name} " in listed.stdout

    dex = _probe(["dex", "--help"], tmp_path)
    assert dex["code"] == 0
    names = dex["modules"]
    assert _loaded(names, "evaltally.benchmarks.dexbench.cli")
    assert not _loaded(names, "evaltally.benchmarks.cte.cli")
    assert not _loaded(names, "evaltally.mockserver")

    typo = tally("dx")
    assert typo.returncode == 2
    assert "Did you mean 'dex'?" in typo.stderr


def test_the_collector_is_back_on_once_a_command_begins_its_work(tmp_path: Path) -> None:
    # Start-up's objects are frozen (never walked again); what the work makes is collected.
    for args in (["status", str(tmp_path / "no-run")], ["dex", "--help"]):
        state = _probe(args, tmp_path)
        assert state["gc"] is True, args
        assert state["frozen"] > 10_000, args
