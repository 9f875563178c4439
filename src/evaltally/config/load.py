"""A sweep config file -> a validated, frozen SweepConfig: the `[run]` table here, the
`[[models]]` and `[[benchmarks]]` entries by their own readers.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from evaltally.config.benchmarks import read_benchmarks
from evaltally.config.budget import check_budget
from evaltally.config.checks import check_run_name
from evaltally.config.models import read_models
from evaltally.config.records import SweepConfig
from evaltally.config.section import NUMBER, Section, printable
from evaltally.errors import ConfigError


def load_config(
    path: Path, *, base_dir: Path | None = None, text: str | None = None
) -> SweepConfig:
    """Read and validate a sweep config. `base_dir` resolves relative paths (a resumed run
    passes the directory of the original config, since it reads the copy in the run dir)."""
    path = Path(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(path, "", f"cannot read the config: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(
                path, "", f"not UTF-8 text (byte {exc.start}); save the file as UTF-8"
            ) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, "", f"not valid TOML: {exc}") from exc
    base = (base_dir or path.parent).resolve()
    top = Section(path, "", raw)
    top.only({"run", "models", "benchmarks"})
    run = Section(path, "run", top.require("run", dict))
    run.only({"name", "runs_dir", "budget_usd"})
    name = check_run_name(path, run.require("name", str))
    runs_dir = Path(printable(run, "runs_dir", run.get("runs_dir", str, "runs")))
    models = read_models(path, top.require("models", list))
    benchmarks = read_benchmarks(path, top.require("benchmarks", list), base, models)
    return SweepConfig(
        path=path,
        name=name,
        runs_dir=runs_dir if runs_dir.is_absolute() else base / runs_dir,
        models=models,
        benchmarks=benchmarks,
        budget_usd=check_budget(run.get("budget_usd", NUMBER, None), path, "run.budget_usd"),
        text=text,
    )
