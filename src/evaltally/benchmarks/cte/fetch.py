"""``tally cte fetch``: download the official Core-v1 scenario file with a pinned SHA-256.

The download goes to ``<dir>/core_v1.jsonl.part`` and is resumed with an HTTP ``Range`` request
when the part file exists (a server that ignores ``Range`` and answers 200 restarts it from
zero). Only a file whose SHA-256 equals the pinned hash is renamed to ``core_v1.jsonl``; a
mismatching download is deleted. Sources are tried in order: the release's GitHub repository at
the pinned commit, then the Hugging Face mirror.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypedDict, Unpack

import aiohttp

from evaltally.errors import DataError

FILENAME = "core_v1.jsonl"
OFFICIAL_SHA256 = "8be8b32fbb4ad8123861353045356dcea00a257b970e45eb7d0ac322d91ded72"
COMMIT = "1a7b6384aef7cfff6ff58ca0b6bd2436700e5b31"
OFFICIAL_URLS: tuple[str, ...] = (
    f"https://raw.githubusercontent.com/XinRanZh/cte-bench-evaluation-code/{COMMIT}/"
    f"counterfactuals/{FILENAME}",
    # mirror named by the release README; same bytes, checked against the same hash
    f"https://huggingface.co/datasets/zhangxr7/cte-bench-core-v1/resolve/main/{FILENAME}",
)
CHUNK = 1 << 16

Progress = Callable[[int, int | None], None]


class FetchOptions(TypedDict, total=False):
    """The keyword options of ``fetch_async`` (defaults there), passed through by ``fetch``."""

    urls: Sequence[str]
    sha256: str
    timeout: float
    progress: Progress | None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _size(path: Path) -> int:
    """Size of ``path`` in bytes, 0 when it does not exist (sync helper for async code)."""
    return path.stat().st_size if path.exists() else 0


def _ready(dest: Path, sha256: str) -> bool:
    """Create the target directory; True when ``dest`` already has the pinned hash."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    return dest.exists() and sha256_file(dest) == sha256


def offline_hint(out_dir: Path, sha256: str) -> str:
    return (
        f"On an offline machine, copy the official {FILENAME} (SHA-256 {sha256}) to "
        f"{out_dir / FILENAME}, or point the sweep config's `path` at a local copy "
        f"(.jsonl or .jsonl.gz); `tally cte replay PATH` checks any copy."
    )


async def _download_once(
    session: aiohttp.ClientSession, url: str, part: Path, progress: Progress | None
) -> None:
    """Download ``url`` into ``part``, resuming from its current size when possible."""
    have = _size(part)
    headers = {"Range": f"bytes={have}-"} if have else {}
    async with session.get(url, headers=headers) as resp:
        if resp.status == 416:  # nothing left to send: the part file is already complete
            return
        if resp.status not in (200, 206):
            raise DataError(f"{url}: HTTP {resp.status}")
        if resp.status == 200:
            have = 0  # the server ignored the range: start over
        total = (resp.content_length or 0) + have if resp.content_length is not None else None
        with part.open("ab" if have else "wb") as fh:
            done = have
            async for block in resp.content.iter_chunked(CHUNK):
                fh.write(block)
                done += len(block)
                if progress:
                    progress(done, total)


async def fetch_async(
    out_dir: Path,
    *,
    urls: Sequence[str] = OFFICIAL_URLS,
    sha256: str = OFFICIAL_SHA256,
    timeout: float = 120.0,
    progress: Progress | None = None,
) -> Path:
    """Make ``out_dir/core_v1.jsonl`` exist with the pinned hash; return its path."""
    dest = out_dir / FILENAME
    if _ready(dest, sha256):
        return dest
    part = out_dir / (FILENAME + ".part")
    failures: list[str] = []
    client_timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=min(timeout, 15.0))
    async with aiohttp.ClientSession(timeout=client_timeout) as session:
        for url in urls:
            for _attempt in range(2):  # a corrupt resumed part gets one clean retry
                try:
                    await _download_once(session, url, part, progress)
                except (aiohttp.ClientError, TimeoutError, OSError, DataError) as exc:
                    failures.append(f"{url}: {type(exc).__name__}: {exc}")
                    break
                got = sha256_file(part) if _size(part) else ""
                if got == sha256:
                    part.replace(dest)
                    return dest
                part.unlink(missing_ok=True)
                failures.append(f"{url}: SHA-256 {got or '(empty)'} != pinned {sha256}")
    raise DataError(
        "could not download the CTE-Bench Core-v1 file:\n  "
        + "\n  ".join(failures)
        + "\n"
        + offline_hint(out_dir, sha256)
    )


def fetch(out_dir: Path, **options: Unpack[FetchOptions]) -> Path:
    """Synchronous ``fetch_async`` (for the CLI)."""
    return asyncio.run(fetch_async(out_dir, **options))
