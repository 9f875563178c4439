"""`python -m evaltally.mockserver` as a separate process: discovery, answers, clean SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import BinaryIO

import pytest


def wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text(encoding="utf-8").strip()
        if proc.poll() is not None:
            raise AssertionError(f"server exited early with {proc.returncode}")
        time.sleep(0.02)
    raise AssertionError("server never wrote its ready file")


def post(url: str, payload: dict[str, object]) -> tuple[int, dict[str, object]]:
    req = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer k"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_module_starts_answers_and_exits_on_sigterm(tmp_path: Path) -> None:
    ready = tmp_path / "ready.url"
    log = tmp_path / "stderr.log"
    with log.open("wb") as err:
        run_server(ready, err)
    assert "listening on" in log.read_text(encoding="utf-8")


def run_server(ready: Path, err: BinaryIO) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evaltally.mockserver",
            "--port",
            "0",
            "--ready-file",
            str(ready),
            "--seed",
            "5",
            "--fault",
            "503:1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=err,
    )
    try:
        base = wait_for(ready, proc)
        assert base.startswith("http://127.0.0.1:")
        msg = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        url = f"{base}/v1/chat/completions"
        assert post(url, msg)[0] == 503  # the scheduled fault from --fault
        status, body = post(url, msg)
        assert status == 200 and body["model"] == "m"
        with urllib.request.urlopen(f"{base}/stats", timeout=5) as r:
            assert json.loads(r.read())["by_status"] == {"503": 1, "200": 1}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_knob_exits_with_a_clear_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "evaltally.mockserver", "--fault", "418"],
        capture_output=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert b"418" in result.stderr
