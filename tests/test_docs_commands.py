"""What README and configs/ show works: the two entry commands exist, and every example config
that needs no downloaded data validates and plans."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from testkit import REPO, tally


def test_readme_starts_with_the_two_commands() -> None:
    readme = (REPO / "README.md").read_text()
    first_block = readme.split("```")[1]
    assert "make demo" in first_block and "make test" in first_block
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (REPO / ".ci" / "run").read_text()


@pytest.mark.parametrize(
    ("config", "calls"),
    [
        ("demo.toml", 91_800 + 2 * 398 * 2),
        ("prompts-example.toml", 30),
        ("prompts-rehearsal.toml", 100),
        ("scae-example.toml", 96),
        ("scae-rehearsal.toml", 64),
        ("dexbench.toml", 3 * 398 * 2 * 5),
        ("dexbench-rehearsal.toml", 2 * 20 * 2 * 5),
        ("batch-rehearsal.toml", 75),
        ("scored-demo.toml", 2 * (4 * 12 + 10 + 8 + 6)),
    ],
)
def test_example_configs_plan(config: str, calls: int) -> None:
    result = tally("plan", str(REPO / "configs" / config))
    assert result.returncode == 0, result.stderr
    assert f"total planned calls: {calls:,} (nothing was sent)" in result.stdout


def test_every_documented_config_key_exists_in_docs() -> None:
    docs = (REPO / "docs" / "config.md").read_text()
    for key in ("concurrency", "rpm", "tpm", "api_key_env", "reasoning", "budget_usd", "samples"):
        assert f"`{key}`" in docs


def test_docs_links_resolve() -> None:
    readme = (REPO / "README.md").read_text()
    for link in re.findall(r"\]\((docs/[^)]+)\)", readme):
        assert Path(REPO / link).exists(), link


def test_the_dexbench_config_plans_a_cost_for_every_model() -> None:
    result = tally("plan", str(REPO / "configs" / "dexbench.toml"), env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if "dexbench" in line and "│" in line]
    assert len(rows) == 6 and all("$" in row for row in rows), result.stdout


def test_the_readme_mock_rehearsal_runs_as_written(tmp_path: Path, mock_process: Any) -> None:
    """README's rehearsal block: the mock with the knobs shown (on a free port instead of
    8787, which another process may hold), then the run line with its environment."""
    readme = (REPO / "README.md").read_text()
    block = readme.split("## Rehearse against the mock provider", 1)[1].split("```sh\n")[1]
    serve, run = block.split("```")[0].strip().splitlines()
    args = shlex.split(serve.rstrip("& "))
    assert args[:4] == ["tally", "mock-server", "--port", "8787"]
    mock = mock_process(*args[4:])
    env_part, command = run.split(" tally ", 1)
    name, _, value = env_part.partition("=")
    argv = shlex.split(command)
    config = REPO / argv[1]
    text = config.read_text().replace("http://127.0.0.1:8787", mock.base_url)
    copy = tmp_path / config.name
    copy.write_text(text.replace('runs_dir = "../runs"', 'runs_dir = "runs"'))
    (tmp_path / "items-example.jsonl").write_text(
        (REPO / "configs" / "items-example.jsonl").read_text()
    )
    done = tally(argv[0], str(copy), env={name: value}, timeout=300)
    assert done.returncode in (0, 3), done.stderr  # 3: some calls failed after 503s; resumable
    assert "planned calls: 100" in done.stdout


def test_the_scored_demo_runs_as_docs_prompts_shows(tmp_path: Path) -> None:
    """docs/prompts.md's worked example (part of `make demo`): every non-model scorer, offline."""
    docs = (REPO / "docs" / "prompts.md").read_text()
    block = docs.split("```sh\n")[1].split("```")[0].strip().splitlines()
    assert block == ["tally run configs/scored-demo.toml", "tally report runs/scored-demo"]
    shutil.copytree(REPO / "configs" / "scored", tmp_path / "configs" / "scored")
    shutil.copy(REPO / "configs" / "scored-demo.toml", tmp_path / "configs")
    for line in block:
        args = shlex.split(line)[1:]
        done = tally(*(str(tmp_path / a) if "/" in a else a for a in args))
        assert done.returncode == 0, done.stderr
    data = orjson.loads((tmp_path / "runs" / "scored-demo" / "report.json").read_bytes())
    scores = data["sections"]["prompts"]["scores"]
    scorers = {s["oracle"]["scorer"]["name"].split(":")[0] for s in scores.values()}
    assert {"exact", "includes", "regex", "number", "choice", "json"} <= scorers
    for bench, models in scores.items():
        assert (
            models["guesser"]["accuracy_ite"]["value"] < models["oracle"]["accuracy_ite"]["value"]
        )
        if bench != "qa-last-word":  # "The answer is George Washington": last word only
            assert models["oracle"]["accuracy_ite"]["value"] == 1.0, bench
