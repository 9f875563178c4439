"""Batch result files are streamed (issue 23, item 5): a result file was held whole in memory,
decompressed, copied for redaction and split into lines (a 3.1 MB gzip cost 3.4 GB for a
one-call batch). Now it goes to a temporary file and is read line by line with a bounded line
length, so the process's peak memory does not grow with the file. Measured as the peak RSS of
the `tally` child process (wait4), against a bound well under the file's size."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_batch import BatchProvider, Request, batch_config, jsonl, ok_lines, result
from hostile_kit import CREDENTIAL_ENV
from hostile_server import Answer, HostileServer

from evaltally.adapters.base import HttpRequest
from evaltally.runner.transport import AiohttpTransport, TransportFailure
from testkit import exported

PAD_BYTES = 400 << 20
"""One result line of 400 MB (compressed to well under a megabyte)."""
RSS_BOUND_KB = 250 << 10
"""Peak RSS allowed: a `tally run` on a small batch stays near 100 MB; holding the file (400 MB
decompressed, copied at least once) passes 800 MB."""


def gzipped_document(requests: list[Request]) -> Iterator[bytes]:
    """An answer for the first call, a 400 MB line, an answer for the second call, gzipped."""
    (first, q1), (second, q2) = requests
    packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    yield packer.compress(jsonl([result("openai", first, f"answer to {q1}")]))
    yield packer.compress(b'{"custom_id": "pad", "response": "')
    block = b"a" * (4 << 20)
    for _ in range(PAD_BYTES // len(block)):
        yield packer.compress(block)
    yield packer.compress(b'"}\n' + jsonl([result("openai", second, f"answer to {q2}")]))
    yield packer.flush()


def export_rows(run_dir: Path) -> list[dict[str, object]]:
    out = run_dir.parent / "export.jsonl"
    rows = exported(run_dir, out)
    return sorted(rows, key=lambda r: str(r["item_id"]))


# A child's peak RSS includes what it held before exec: a fork of a large pytest process
# would count as `tally`'s. So a small launcher starts `tally` and reports its wait4 figure.
LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen([sys.executable, "-m", "evaltally", *sys.argv[1:]],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def peak_rss_kb(args: list[str], cwd: Path) -> tuple[int, int]:
    """(exit status, peak RSS in KiB) of `tally ARGS` run to its end."""
    env = {**os.environ, **CREDENTIAL_ENV}
    done = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    code, peak = done.stdout.split()
    return int(code), int(peak)


def test_a_huge_result_file_is_read_in_bounded_memory(tmp_path: Path) -> None:
    provider = BatchProvider("openai", ok_lines("openai"))
    provider.headers = [("content-encoding", "gzip")]
    provider.chunks = lambda: gzipped_document(provider.requests)
    with HostileServer(provider) as server:
        config = batch_config(tmp_path, server.base_url, "openai", items=2)
        code, peak_kb = peak_rss_kb(["run", str(config)], tmp_path)
    assert code == 0
    rows = export_rows(tmp_path / "runs" / "hb")
    assert [r["raw_text"] for r in rows] == ["answer to question 0", "answer to question 1"]
    assert peak_kb < RSS_BOUND_KB, f"peak RSS {peak_kb / 1024:.0f} MB"
    assert not list((tmp_path / "runs" / "hb").glob(".batch-*"))  # the temporary file is gone
    print(f"peak RSS of tally run: {peak_kb / 1024:.0f} MB")


async def test_a_result_file_over_the_cap_stops_with_the_reason(tmp_path: Path) -> None:
    """The cap counts decompressed bytes as they are written: a bomb stops at the cap."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = b"".join([packer.compress(bytes(64 << 20)), packer.flush()])
    answer = Answer(headers=[("content-encoding", "gzip")], body=bomb)
    transport = AiohttpTransport()
    with HostileServer(lambda seen: answer) as server, (tmp_path / "sink").open("w+b") as sink:
        request = HttpRequest("GET", server.base_url + "/v1/files/f/content", b"")
        try:
            with pytest.raises(TransportFailure) as info:
                await transport.send_to_file(request, 20.0, 1 << 20, sink)
        finally:
            await transport.close()
        written = sink.tell()
    assert info.value.error_class == "response_too_large" and info.value.retry is False
    assert "file over 1,048,576 bytes (decompressed)" in info.value.detail
    assert written <= 1 << 20
