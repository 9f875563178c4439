"""Why each lane waits reaches `tally status` and the view through the run directory (issue
29, item 3): the live session publishes it, and nothing stale or malformed is shown."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from evaltally.config import Limits
from evaltally.runner.clock import VirtualClock
from evaltally.runner.lane import Lane
from evaltally.runner.lane_states import (
    LANES_FILE,
    STALE_AFTER_S,
    read_lane_states,
    write_lane_states,
)
from evaltally.runner.progress import ProgressReporter, log_line


def test_states_round_trip_and_go_stale(tmp_path: Path) -> None:
    write_lane_states(tmp_path, {"m1": "paused (rate limit; 0.8 s left)"})
    assert read_lane_states(tmp_path) == {"m1": "paused (rate limit; 0.8 s left)"}
    later = (tmp_path / LANES_FILE).stat().st_mtime + STALE_AFTER_S + 60
    assert read_lane_states(tmp_path, now=later) == {}


def test_a_missing_or_malformed_file_shows_nothing(tmp_path: Path) -> None:
    assert read_lane_states(tmp_path) == {}
    (tmp_path / LANES_FILE).write_text("{not json")
    assert read_lane_states(tmp_path) == {}
    (tmp_path / LANES_FILE).write_text('{"at": "x", "lanes": []}')
    assert read_lane_states(tmp_path) == {}


async def test_the_reporter_publishes_each_lanes_cause_and_removes_it_at_the_end(
    tmp_path: Path,
) -> None:
    t = VirtualClock()
    paused = Lane("paused", Limits(), clock=t.monotonic, sleep=t.sleep)
    paused.pause(30.0)
    waiting = Lane("waiting", Limits(), clock=t.monotonic, sleep=t.sleep)
    waiting.stats.retry_waiting = 2
    reporter = ProgressReporter({"a": paused, "b": waiting}, io.StringIO(), tmp_path)
    task = asyncio.create_task(reporter.run())
    for _ in range(100):
        await asyncio.sleep(0)
        if (tmp_path / LANES_FILE).exists():
            break
    states = read_lane_states(tmp_path)
    assert states["a"].startswith("paused (rate limit")
    assert "2 waiting out their own Retry-After" in states["b"]
    reporter.stop()
    await task
    assert not (tmp_path / LANES_FILE).exists()
    assert "paused (rate limit" in log_line("a", paused)
