"""Helpers for the `tally view` tests: the server as a real subprocess, screenshots, and runs
whose ids, prompts and answers carry markup."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from testkit import REPO, write_config

CHROMIUM_ENV = "EVALTALLY_CHROMIUM"
XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
XSS_ITEM = '<img src=x onerror="window.__pwned = 3">'


def chromium_path() -> str:
    path = os.environ.get(CHROMIUM_ENV) or shutil.which("chromium")
    if not path:
        pytest.fail(
            "the browser tests need Debian's chromium: run `make test` (it installs it with "
            f"apt-get) or `apt-get install chromium`, or point {CHROMIUM_ENV} at a Chromium"
        )
    return path


def screenshot(pg: Any, name: str, tmp_path: Path, *, full_page: bool = False) -> Path:
    """Every page is screenshotted; with EVALTALLY_DOCS_SCREENSHOTS=1 into docs/ as well."""
    out = tmp_path / f"{name}.png"
    pg.screenshot(path=str(out), full_page=full_page)
    assert out.stat().st_size > 10_000  # a blank page compresses to almost nothing
    if os.environ.get("EVALTALLY_DOCS_SCREENSHOTS") == "1":
        shutil.copy(out, REPO / "docs" / f"{name}.png")
    return out


@dataclass
class ViewProcess:
    proc: subprocess.Popen[bytes]
    url: str

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
        """(status, headers, decoded JSON or raw bytes) of a GET on the server."""
        req = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, hdrs, body = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as exc:
            status, hdrs, body = exc.code, exc.headers, exc.read()
        if hdrs.get("Content-Type", "").startswith("application/json"):
            return status, hdrs, orjson.loads(body)
        return status, hdrs, body

    def api(self, path: str) -> Any:
        status, _, data = self.get(path)
        assert status == 200, (path, status, data)
        return data


def start_view(ready: Path, *run_dirs: Path, extra: tuple[str, ...] = ()) -> ViewProcess:
    cmd = [sys.executable, "-m", "evaltally", "view", *map(str, run_dirs), "--port", "0"]
    proc = subprocess.Popen(
        [*cmd, "--ready-file", str(ready), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            raise RuntimeError(f"tally view did not start: {err.decode()}")
        time.sleep(0.05)
    return ViewProcess(proc, ready.read_text().strip())


def stop(proc: subprocess.Popen[bytes]) -> str:
    """Stop the server (SIGTERM, as Ctrl-C would); returns what it wrote to stderr."""
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return (err or b"").decode()


def cte_config(root: Path) -> Path:
    """The demo's baselines on two built-in CTE scenarios, all three protocols (480 calls)."""
    models = "".join(
        f'[[models]]\nkey = "{m}"\nprovider = "baseline"\nmodel = "{m}"\n'
        for m in ("replay", "copy_last")
    )
    text = (
        f'[run]\nname = "demo-small"\nruns_dir = "runs"\n\n{models}\n'
        '[[benchmarks]]\nkind = "cte"\ndata = "builtin"\nlimit = 2\n'
        'protocols = ["answers_revealed", "no_feedback", "free_rollout"]\n'
    )
    path = root / "demo-small.toml"
    path.write_text(text)
    return path


def xss_config(root: Path, base_url: str) -> Path:
    """A prompts run whose item id, prompt and (scripted) answer all carry markup."""
    lines = [
        {"id": XSS_ITEM, "messages": [{"role": "user", "content": f"xss please {XSS}"}]},
        {"id": "plain", "messages": [{"role": "user", "content": "a plain question"}]},
    ]
    (root / "items.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return write_config(root, base_url, name="xss")


def xss_answers(root: Path) -> Path:
    path = root / "answers.jsonl"
    path.write_bytes(orjson.dumps({"match": "xss please", "answer": f"here: {XSS}"}) + b"\n")
    return path
