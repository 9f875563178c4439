"""`--ready-file` of the long-running servers (`tally view`, `tally mock-server`): the URL they
listen on, for whoever started them on port 0."""

from __future__ import annotations

from pathlib import Path


def announce(ready_file: Path, url: str) -> None:
    """Write `url` to `ready_file` whole or not at all (a temporary file, then a rename): whoever
    polls for the file must never read it empty or half written."""
    tmp = ready_file.with_name(ready_file.name + ".tmp")
    tmp.write_text(url + "\n", encoding="utf-8")
    tmp.replace(ready_file)
