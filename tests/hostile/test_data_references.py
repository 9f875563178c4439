"""A data file naming local files (issue 23, item 1; item 8's blank-line gzip).

A CTXGAP view's `text_file` accepted `../`, absolute paths and symlinks out of the data
directory (the file's content went to the observer model and into the ledger), any size (600 MB
drove `tally` to 22.8 GB) and FIFOs (the command hung). Now the file must resolve inside the data
directory, be a regular file and be at most 32 MiB: else one line naming the file, key and reason.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from testkit import tally

SECRET = "the-contents-of-a-file-outside-the-data-directory"


def data_dir(tmp_path: Path, text_file: str) -> Path:
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    view = {"task_id": "t1", "checkpoint": "c1", "view": "T", "text_file": text_file}
    (d / "views.jsonl").write_bytes(orjson.dumps(view) + b"\n")
    probe = {
        "probe_id": "p1",
        "task_id": "t1",
        "checkpoint": "c1",
        "question": "q?",
        "reference": "r",
        "category": "effect",
        "importance": "high",
    }
    (d / "probes.jsonl").write_bytes(orjson.dumps(probe) + b"\n")
    return d


def _outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    return secret


def _dotdot(tmp_path: Path) -> tuple[str, str]:
    _outside(tmp_path)
    return "../secret.txt", "outside the data directory"


def _absolute(tmp_path: Path) -> tuple[str, str]:
    return str(_outside(tmp_path)), "must be a path relative to"


def _symlink(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "inside.md").symlink_to(_outside(tmp_path))
    return "inside.md", "outside the data directory"


def _fifo(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "data").mkdir()
    os.mkfifo(tmp_path / "data" / "pipe.md")
    return "pipe.md", "not a regular file"


def _huge(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "data").mkdir()
    with (tmp_path / "data" / "huge.md").open("wb") as fh:
        fh.truncate(600 << 20)  # sparse: 600 MB long, nothing on disk
    return "huge.md", "629,145,600 bytes; the limit is 33,554,432"


@pytest.mark.parametrize("case", [_dotdot, _absolute, _symlink, _fifo, _huge])
def test_text_file_must_stay_inside_the_data_directory(
    tmp_path: Path, case: Callable[[Path], tuple[str, str]]
) -> None:
    name, reason = case(tmp_path)
    views = data_dir(tmp_path, name)
    done = tally("ctxgap", "check", str(views), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "views.jsonl:1" in lines[0] and "text_file" in lines[0], lines
    assert reason in lines[0], lines[0]
    assert SECRET not in done.stdout + done.stderr


def test_a_gzip_of_blank_lines_fails_at_once(tmp_path: Path) -> None:
    d = tmp_path / "data"
    d.mkdir()
    with gzip.open(d / "views.jsonl.gz", "wb") as fh:
        fh.write(b"\n" * 3_000_000)
    (d / "probes.jsonl").write_text("")
    done = tally("ctxgap", "check", str(d), timeout=60)
    assert done.returncode == 2
    assert "views.jsonl.gz:1000001: over 1,000,000 blank or comment lines" in done.stderr
