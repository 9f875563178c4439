"""DNS rebinding (issue 23, item 4): naming a loopback address with --host must not turn the
Host header check off. A page on attacker.example whose name is rebound to 127.0.0.1 sends
`Host: attacker.example:PORT`; it is refused on every loopback bind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from view_testkit import ViewProcess, stop


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_host_keeps_the_host_check(
    cte_run: Path, view_server: Callable[..., ViewProcess], host: str
) -> None:
    view = view_server(cte_run, extra=("--host", host))
    port = view.url.rstrip("/").rsplit(":", 1)[1]
    status, _, body = view.get("/api/runs", {"Host": f"attacker.example:{port}"})
    assert status == 403 and "not served here" in body["error"], (status, body)
    assert view.get("/api/runs")[0] == 200  # under the URL it printed
    assert view.get("/api/runs", {"Host": f"localhost:{port}"})[0] == 200
    assert "warning: listening" not in stop(view.proc)
