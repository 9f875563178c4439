"""Starting a run built on another run (`tally fork`, `tally scae cte-judge`): where it goes,
its config's model tables, and running it like `tally run`."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evaltally.config.checks import check_run_name
from evaltally.errors import ConfigError, EvaltallyError


def derived_run_dir(parent: Path, out: Path | None, name: str | None, suffix: str) -> Path:
    """The directory of a run built on `parent`: `-o DIR`, or `--name NAME` beside the parent,
    or `<parent name>-<suffix>` beside it."""
    if out is not None and name is not None:
        raise EvaltallyError("give either -o/--output or --name, not both")
    if out is not None:
        if out.exists() and not out.is_dir():
            raise ConfigError(f"-o {out}", "", "exists and is not a directory (-o names a run)")
        return out
    if name is not None:
        # A name, never a path: `--name ../x` would write outside the parent's directory.
        try:
            check_run_name(Path("--name"), name)
        except ConfigError as exc:
            raise ConfigError(f"--name {name!r}", "", exc.reason) from None
    return Path(parent).resolve().parent / (name or f"{Path(parent).resolve().name}-{suffix}")


def start_derived_run(run_dir: Path, compose: Callable[[], str], budget: float | None) -> None:
    """Write the config `compose()` returns as `run_dir`'s config copy (config/run_dir.py), then
    run it like `tally run`, with the same summary and exit statuses. `tally resume run_dir`
    continues it."""
    from evaltally.cli.runs import run_config
    from evaltally.config import load_config
    from evaltally.config.run_dir import write_derived_config
    from evaltally.ledger.files import ledger_path

    # The composed config is the run's copy before its ledger exists (unlike `tally run`, whose
    # copy follows the ledger), so a first start must not read as a lost ledger.
    fresh = not ledger_path(Path(run_dir).resolve()).exists()
    run_config(lambda: load_config(write_derived_config(run_dir, compose())), budget, fresh)


def model_tables(source: Path, text: str, keys: Sequence[str]) -> list[dict[str, Any]]:
    """The `[[models]]` tables of a config's text, as written (all, or those with these keys
    in this order), for a derived run's config."""
    try:
        tables = tomllib.loads(text).get("models")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(source, "", f"not valid TOML: {exc}") from None
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(source, "models", "needs at least one [[models]] entry")
    by_key = {str(t.get("key")): t for t in tables}
    for key in keys:
        if key not in by_key:
            raise ConfigError(
                source, "models", f"no model with key {key!r}; keys: {', '.join(by_key)}"
            )
    return [by_key[k] for k in keys] if keys else list(tables)
