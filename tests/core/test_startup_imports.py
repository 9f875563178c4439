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

from testkit import FAKE_KEY, tally, write_config, write_items

# Loaded only by the commands (or the batch mode, or the terminal display) that need them.
NOT_IN_A_RUN = (
    "evaltally.mockserver",
    "evaltally.view",
    "evaltally.report",
    "evaltally.cli_batch",
    "evaltally.batch_plan",
    "evaltally.runner.batch.rounds",
    "evaltally.adapters.batch",
    "evaltally.benchmarks.cli_common",
    "evaltally.benchmarks.cte.cli",
    "evaltally.benchmarks.ctxgap.cli",
    "evaltally.benchmarks.dexbench.cli",
    "evaltally.benchmarks.fork.cli",
    "evaltally.benchmarks.scae.cli",
    "rich.live",
    "rich.table",
    "matplotlib",
    "tiktoken",
)

# `tally run ARGS` through the CLI app in this process, then the names of the loaded modules
# into the file named by the first argument (`tally`'s own entry point ends the process with
# os._exit, before anything could be read).
PROBE = """
import sys
from pathlib import Path
out = Path(sys.argv.pop(1))
from evaltally.cli import app
try:
    app()
except SystemExit as done:
    code = done.code
out.write_text(f"{code}\\n" + "\\n".join(sorted(sys.modules)))
"""


def _modules_of(args: list[str], tmp_path: Path) -> tuple[int, set[str]]:
    """The exit status of `tally ARGS` run in `tmp_path`, and the modules it had loaded."""
    out = tmp_path / "modules.txt"
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
    code, *names = out.read_text().splitlines()
    return int(code), set(names)


def _loaded(names: set[str], module: str) -> bool:
    return module in names or any(name.startswith(module + ".") for name in names)


def test_a_one_call_run_loads_no_module_it_does_not_use(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process()
    write_items(tmp_path / "items.jsonl", 1)
    config = write_config(tmp_path, mock.base_url)
    code, names = _modules_of(["run", str(config)], tmp_path)
    assert code == 0
    assert mock.stats()["total"] == 1
    assert "evaltally.runner.session" in names and "aiohttp" in names  # it did run
    assert [m for m in NOT_IN_A_RUN if _loaded(names, m)] == []


def test_mounted_commands_are_listed_and_built_when_named(tmp_path: Path) -> None:
    listed = tally("--help")
    assert listed.returncode == 0, listed.stderr
    for name in ("fork", "mock-server", "cte", "ctxgap", "scae", "dex"):
        assert f" {name} " in listed.stdout

    code, names = _modules_of(["dex", "--help"], tmp_path)
    assert code == 0
    assert _loaded(names, "evaltally.benchmarks.dexbench.cli")
    assert not _loaded(names, "evaltally.benchmarks.cte.cli")
    assert not _loaded(names, "evaltally.mockserver")

    typo = tally("dx")
    assert typo.returncode == 2
    assert "Did you mean 'dex'?" in typo.stderr
