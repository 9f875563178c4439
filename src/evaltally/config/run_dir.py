"""A run directory's copy of its config: read back by every command that works on a run (resume,
status, export, report, and runs built on another run's answers), kept up to date by a session,
and written first for a run derived from another one (`tally fork`, `tally scae cte-judge`).

A run keeps the config it was started with, so editing the original file never silently changes
a run in progress; `.config_dir` remembers the original's directory, against which relative
paths in it resolve.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from evaltally.config import SweepConfig, load_config
from evaltally.errors import LedgerError
from evaltally.ledger.files import CONFIG_COPY, CONFIG_DIR_FILE, STAGED_COPY, write_failure

__all__ = [
    "CONFIG_COPY",
    "STAGED_COPY",
    "keep_config_copy",
    "load_run_config",
    "stage_config_copy",
    "write_derived_config",
]


def load_run_config(run_dir: Path) -> SweepConfig:
    """The config a run was started with, paths resolved as they were at the start."""
    run_dir = Path(run_dir)
    copy = run_dir / CONFIG_COPY
    if run_dir.is_file():
        raise LedgerError(
            f"{run_dir} is a file, not a run directory; to start or continue the run a config "
            f"describes, use `tally run {run_dir}`"
        )
    if not copy.exists():
        raise LedgerError(
            f"{run_dir}: not a run directory (no {CONFIG_COPY}); start the run with "
            "`tally run CONFIG`"
        )
    base_file = run_dir / CONFIG_DIR_FILE
    base = Path(base_file.read_text().strip()) if base_file.exists() else run_dir
    text = copy.read_text(encoding="utf-8")
    staged = _committed_stage(run_dir)
    if staged is not None:
        text, base = staged
    config = load_config(copy, base_dir=base, text=text)
    # The run directory is wherever the run lives now, even if it was moved.
    return replace(config, path=copy, name=run_dir.name, runs_dir=run_dir.parent)


def stage_config_copy(config: SweepConfig, run_dir: Path) -> None:
    """Before a continued run records a plan from a changed config: stage the config beside
    the copy. The plan and the config it came from commit together in the ledger; a session
    killed after that commit and before `keep_config_copy` leaves the staged file, and the
    ledger says it was committed (`load_run_config` then follows it). A copy the user edits
    (grading-only options) is never second-guessed: only a staged file is compared."""
    copy, staged = run_dir / CONFIG_COPY, run_dir / STAGED_COPY
    try:
        if copy.exists() and copy.read_text(encoding="utf-8") == config.text:
            staged.unlink(missing_ok=True)
            return
        staged.write_text(config.text, encoding="utf-8")
    except OSError as exc:
        raise write_failure(exc, staged, "stage the config copy") from exc


def _committed_stage(run_dir: Path) -> tuple[str, Path] | None:
    """(text, base directory) of a staged config whose plan the ledger committed last."""
    staged = run_dir / STAGED_COPY
    if not staged.exists():
        return None
    text = staged.read_text(encoding="utf-8")
    planned = _planned_config(run_dir)
    if planned is None or planned.get("text") != text:
        return None  # killed before the commit: the run follows its copy
    return text, Path(str(planned.get("path", staged))).parent


def _planned_config(run_dir: Path) -> dict[str, object] | None:
    """The config entry the ledger recorded with its latest plan, if the ledger is readable."""
    from evaltally.ledger import latest_meta
    from evaltally.ledger.files import ledger_path, ledger_tables

    try:
        # Looked at without creating -wal/-shm files first: a lost ledger is described by what
        # is left of it (Ledger.open), so nothing may be added beside it.
        if "meta" not in ledger_tables(ledger_path(run_dir)):
            return None
        value = latest_meta(run_dir, "config")
    except LedgerError:
        return None  # a damaged ledger: the commands that open it say so
    return value if isinstance(value, dict) else None


def keep_config_copy(config: SweepConfig, run_dir: Path) -> None:
    """Keep the config the run now follows (an extension or a replacement replaces the copy;
    the ledger's meta keeps the history)."""
    copy = run_dir / CONFIG_COPY
    try:
        unchanged = copy.exists() and copy.read_text(encoding="utf-8") == config.text
        if not unchanged:
            tmp = copy.with_suffix(".tmp")
            tmp.write_text(config.text, encoding="utf-8")
            tmp.replace(copy)
        if config.path.resolve() != copy.resolve() and not unchanged:
            (run_dir / CONFIG_DIR_FILE).write_text(str(config.path.parent.resolve()))
        (run_dir / STAGED_COPY).unlink(missing_ok=True)
    except OSError as exc:
        raise write_failure(exc, copy, "keep the config copy") from exc


def write_derived_config(run_dir: Path, text: str) -> Path:
    """Start a run whose config a command composed (its paths absolute): the text is checked
    first, then written as the run's config copy. Repeating the command with the same arguments
    continues the run; other arguments for a run that has a ledger are refused (a start that
    failed before its ledger existed is simply replaced)."""
    from evaltally.ledger.files import ledger_path

    run_dir = Path(run_dir).resolve()
    copy = run_dir / CONFIG_COPY
    load_config(copy, text=text)
    if copy.exists() and copy.read_text(encoding="utf-8") == text:
        return copy
    if ledger_path(run_dir).exists():
        raise LedgerError(
            f"{run_dir} already holds a run started with other arguments; continue it with "
            f"`tally resume {run_dir}`, or name a new run directory"
        )
    if not copy.exists() and run_dir.exists() and any(run_dir.iterdir()):
        raise LedgerError(f"{run_dir} exists and is not empty; name a new run directory")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        copy.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise LedgerError(f"cannot write {copy}: {exc.strerror or exc}") from exc
    return copy
