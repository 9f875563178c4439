"""Files that a data file names (a CTXGAP view's `text_file`): read only inside the data file's
own directory, only if regular, only up to a size.

A data file comes from someone else as often as from the user, and what it names is read and
sent to a model: so a name that leaves the directory (`../`, an absolute path, a symlink
pointing out), a FIFO or device (which would hang or never end) or a file over the cap is refused
with the reason, before a byte of it is read. The check is made on the opened file (fstat), so
a file swapped for a link between the check and the read is still caught.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_REFERENCED_BYTES = 32 * 1024 * 1024
"""Far above any view or trace text; the size of one JSONL line (jsonl.MAX_LINE_BYTES)."""


class RefusedFile(Exception):
    """Why a referenced file is not read (the caller names the file, line and key)."""


def read_referenced(directory: Path, name: str, max_bytes: int = MAX_REFERENCED_BYTES) -> str:
    """The UTF-8 text of `name`, a path relative to `directory` that must stay inside it."""
    if not name or Path(name).is_absolute():
        raise RefusedFile(f"{name!r} must be a path relative to {directory}")
    root = directory.resolve()
    try:
        target = (root / name).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise RefusedFile(f"cannot read {root / name}: {why}") from None
    if not target.is_relative_to(root):
        raise RefusedFile(f"{name!r} resolves to {target}, outside the data directory {root}")
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        raise RefusedFile(f"cannot read {target}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFile(f"{target} is not a regular file (a FIFO, device or directory)")
        if info.st_size > max_bytes:
            raise RefusedFile(f"{target} is {info.st_size:,} bytes; the limit is {max_bytes:,}")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise RefusedFile(f"{target} grew past {max_bytes:,} bytes while it was read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        why = f"{exc.reason} at byte {exc.start}"
        raise RefusedFile(f"{target} is not UTF-8 text ({why})") from None
