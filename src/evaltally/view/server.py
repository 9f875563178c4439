"""Start `tally view`: bind, say where, serve until Ctrl-C or SIGTERM."""

from __future__ import annotations

import asyncio
import ipaddress
import signal
from collections.abc import Callable, Sequence
from pathlib import Path

from aiohttp import web

from evaltally.errors import ViewError
from evaltally.ready_file import announce
from evaltally.view.app import make_app
from evaltally.view.runs import open_runs

LOOPBACK = "127.0.0.1"


LOOPBACK_NAMES = ("localhost", LOOPBACK, "[::1]")
"""Names that reach a loopback bind from this machine only: no DNS answer can point them
elsewhere, so a page under them is never another site's (DNS rebinding)."""


def is_loopback(host: str) -> bool:
    """Whether `host` only listens on this machine (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _allowed_hosts(host: str, port: int) -> set[str]:
    own = _url_host(host)
    names = {own, *LOOPBACK_NAMES} if is_loopback(host) else {own}
    return {f"{name}:{port}" for name in names}


async def serve(
    run_dirs: Sequence[Path],
    *,
    host: str = LOOPBACK,
    port: int,
    ready_file: Path | None = None,
    say: Callable[[str], None] = print,
) -> None:
    """Serve the runs until a signal. On a loopback address only requests naming it (or
    localhost) are answered; any other address accepts any Host header, as the page is then
    reached under names this process cannot know."""
    runs = open_runs(run_dirs)
    allowed: set[str] | None = set() if is_loopback(host) else None
    runner = web.AppRunner(make_app(runs, allowed), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            raise ViewError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
                "choose another port with --port (0 picks a free one)"
            ) from exc
        bound = _bound_port(runner, port)
        if allowed is not None:
            allowed.update(_allowed_hosts(host, bound))
        url = f"http://{_url_host(host)}:{bound}/"
        say(f"serving {', '.join(runs)} on {url} (read-only; Ctrl-C stops)")
        if ready_file is not None:
            await asyncio.to_thread(announce, ready_file, url.rstrip("/"))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


def _bound_port(runner: web.AppRunner, asked: int) -> int:
    for addr in runner.addresses:
        if isinstance(addr, tuple) and len(addr) >= 2:
            return int(addr[1])
    return asked


def _url_host(host: str) -> str:
    bare = host.strip("[]")
    return f"[{bare}]" if ":" in bare else bare
