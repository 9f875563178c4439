"""What each lane of a live session waits on, for `tally status` and `tally view`.

A session rewrites `lanes.json` in its run directory every WRITE_EVERY_S (one small file
replaced whole, never the ledger: it is the present, not the history) and removes it when it
ends; a reader ignores a file older than STALE_AFTER_S (a session killed before it could
remove it). Writing is a display aid: an error writing it never stops the run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import orjson

LANES_FILE = "lanes.json"
WRITE_EVERY_S = 2.0
STALE_AFTER_S = 30.0


def write_lane_states(run_dir: Path, states: Mapping[str, str]) -> None:
    """Replace the file with `states` (lane name -> why it waits)."""
    target = run_dir / LANES_FILE
    tmp = target.with_name(LANES_FILE + ".tmp")
    try:
        tmp.write_bytes(orjson.dumps({"at": time.time(), "lanes": dict(states)}))
        tmp.replace(target)
    except OSError:
        return


def clear_lane_states(run_dir: Path) -> None:
    try:
        (run_dir / LANES_FILE).unlink(missing_ok=True)
    except OSError:
        return


def read_lane_states(run_dir: Path, now: float | None = None) -> dict[str, str]:
    """Lane name -> why it waits, as the live session last wrote it; {} when none is fresh."""
    try:
        data = orjson.loads((run_dir / LANES_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("lanes"), dict):
        return {}
    at = data.get("at")
    now = time.time() if now is None else now
    if not isinstance(at, int | float) or now - at > STALE_AFTER_S:
        return {}
    return {str(k): str(v) for k, v in data["lanes"].items()}
