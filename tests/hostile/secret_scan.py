"""Find a credential anywhere a run left text: the run directory (every stored body in the ledger
decompressed, every column of every table, every other file), stdout, stderr, the export and the
report.

Written independently of evaltally.redact, so it is a check on it rather than a copy: it looks
for the value in any letter case, percent-encoded, as any FRAGMENT-character window (a clipped
echo), and inside every run of base64 (either alphabet, any alignment) it can decode.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
import sqlite3
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import quote

FRAGMENT = 16
_BASE64_RUN = re.compile(rb"[A-Za-z0-9+/_\-]{16,}")


def _windows(secret: str) -> set[bytes]:
    size = min(FRAGMENT, len(secret))
    return {secret[i : i + size].lower().encode() for i in range(len(secret) - size + 1)}


def _decoded_runs(data: bytes) -> Iterable[bytes]:
    for match in _BASE64_RUN.finditer(data):
        run = match.group().replace(b"-", b"+").replace(b"_", b"/")
        for offset in range(4):
            piece = run[offset:]
            piece = piece[: len(piece) - len(piece) % 4]
            try:
                yield base64.b64decode(piece)
            except (binascii.Error, ValueError):
                continue


def leaks_in(data: bytes, secrets: Mapping[str, str]) -> list[str]:
    """The names of the secrets `data` gives away, with the form they were found in."""
    found = []
    lowered = data.lower()
    decoded = [d.lower() for d in _decoded_runs(data)]
    for name, secret in secrets.items():
        if any(w in lowered for w in _windows(secret)):
            found.append(f"{name} (as text)")
        elif quote(secret, safe="").lower().encode() in lowered:
            found.append(f"{name} (percent-encoded)")
        elif any(w in d for d in decoded for w in _windows(secret)):
            found.append(f"{name} (in base64)")
    return found


def _ledger_values(path: Path) -> Iterable[tuple[str, bytes]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, bytes):
                        yield table, value
                        with contextlib.suppress(zlib.error):
                            yield f"{table} (decompressed)", zlib.decompress(value)
                    elif isinstance(value, str):
                        yield table, value.encode()
    finally:
        db.close()


def scan(
    secrets: Mapping[str, str], *, run_dir: Path | None = None, **texts: str | bytes | Path
) -> list[str]:
    """Every place a secret was found, as "where: which secret (form)". Empty means clean.

    `texts` are named outputs: stdout/stderr strings, an export or report file (a Path), ...
    """
    places: list[tuple[str, bytes]] = []
    if run_dir is not None:
        for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
            places.append((str(path), path.read_bytes()))
            if path.name == "ledger.sqlite":
                places += [(f"{path}:{where}", v) for where, v in _ledger_values(path)]
    for name, text in texts.items():
        if isinstance(text, Path):
            places.append((f"{name} ({text})", text.read_bytes()))
        else:
            places.append((name, text.encode() if isinstance(text, str) else text))
    return [f"{where}: {leak}" for where, data in places for leak in leaks_in(data, secrets)]
