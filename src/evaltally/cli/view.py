"""`tally view`: the read-only local web page over runs (docs/view.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from evaltally.cli.output import err, guard, out


def view(
    run_dirs: list[Path] = typer.Argument(..., help="run directories to show"),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="TCP port (0: a free one)"),
    host: str | None = typer.Option(
        None, "--host", help="listen on this address instead of 127.0.0.1 (exposes every answer)"
    ),
    ready_file: Path | None = typer.Option(None, "--ready-file", hidden=True),
) -> None:
    """Serve a read-only web page over runs: overview, calls, one call, report (docs/view.md)."""

    def go() -> None:
        from evaltally.view import LOOPBACK, is_loopback, serve

        if host is not None and not is_loopback(host):
            err.print(
                f"warning: listening on {host}: anyone who can reach it reads every prompt and "
                "answer of these runs (there is no login); the default is 127.0.0.1",
                highlight=False,
                markup=False,
            )

        def say(line: str) -> None:
            out.print(line, highlight=False, markup=False)

        asyncio.run(
            serve(
                run_dirs,
                host=host or LOOPBACK,
                port=port,
                ready_file=ready_file,
                say=say,
            )
        )

    guard(go, resumable=True)
