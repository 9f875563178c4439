"""What every benchmark's CLI sub-app (`tally <kind> ...`) shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import typer

from evaltally.errors import EvaltallyError

T = TypeVar("T")


def guard(fn: Callable[[], T]) -> T:
    """Run ``fn``; an EvaltallyError becomes its message on stderr and its exit code."""
    try:
        return fn()
    except EvaltallyError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
