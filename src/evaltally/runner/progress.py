"""Per-lane progress: a live rich table on a terminal, plain log lines otherwise."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from evaltally.runner import clock as clk
from evaltally.runner.lane import Lane
from evaltally.runner.lane_states import WRITE_EVERY_S, clear_lane_states, write_lane_states
from evaltally.terminal import visible

if TYPE_CHECKING:
    from rich.table import Table

LOG_EVERY_S = 10.0


def _eta(lane: Lane, now: float) -> str:
    s = lane.stats
    left = s.planned - s.done
    elapsed = now - s.started
    if left <= 0:
        return "done"
    if s.done == 0 or elapsed <= 0:
        return "-"
    secs = left / (s.done / elapsed)
    return f"{int(secs // 60)}m{int(secs % 60):02d}s"


def render_table(lanes: Mapping[str, Lane]) -> Table:
    from rich.table import Table

    table = Table(title="evaltally", expand=False)
    for col in ("lane", "done/planned", "in flight", "retries", "429s", "waited", "tokens in/out"):
        table.add_column(col, justify="right" if col != "lane" else "left")
    table.add_column("cost", justify="right")
    table.add_column("ETA", justify="right")
    table.add_column("state")
    now = clk.monotonic()
    for name, lane in lanes.items():
        s = lane.stats
        table.add_row(
            name,
            f"{s.done}/{s.planned}",
            str(s.in_flight),
            str(s.retries),
            str(s.rate_limited),
            f"{s.wait_s:.0f}s",
            f"{s.input_tokens}/{s.output_tokens}",
            f"${s.cost_usd:.2f}",
            _eta(lane, now),
            lane.wait_cause(),
        )
    return table


def log_line(name: str, lane: Lane) -> str:
    s = lane.stats
    return (
        f"[{name}] {s.done}/{s.planned} done (ok {s.ok}, parse_error {s.parse_error}, "
        f"failed {s.failed}, blocked {s.blocked}), in flight {s.in_flight}, retries {s.retries}, "
        f"429s {s.rate_limited}, tokens {s.input_tokens}/{s.output_tokens}, "
        f"cost ${s.cost_usd:.2f}, ETA {_eta(lane, clk.monotonic())}, {lane.wait_cause()}"
    )


class ProgressReporter:
    """Runs beside the scheduler until stopped; shows every lane's counters, and publishes why
    each lane waits to `run_dir` (runner/lane_states.py) for `tally status` and the view."""

    def __init__(
        self,
        lanes: Mapping[str, Lane],
        stream: TextIO | None = None,
        run_dir: Path | None = None,
    ) -> None:
        self.lanes = lanes
        self.stream = stream or sys.stderr
        self.run_dir = run_dir
        self._stopped = asyncio.Event()

    def stop(self) -> None:
        self._stopped.set()

    async def _tick(self, seconds: float) -> bool:
        """Wait up to `seconds`; True once stop() was called."""
        with suppress(TimeoutError):
            await asyncio.wait_for(self._stopped.wait(), seconds)
        return self._stopped.is_set()

    async def run(self) -> None:
        show = self._live() if self.stream.isatty() else self._log()
        if self.run_dir is None:
            await show
            return
        try:
            await asyncio.gather(show, self._publish(self.run_dir))
        finally:
            clear_lane_states(self.run_dir)

    async def _publish(self, run_dir: Path) -> None:
        while True:
            write_lane_states(run_dir, {n: lane.wait_cause() for n, lane in self.lanes.items()})
            if await self._tick(WRITE_EVERY_S):
                return

    async def _live(self) -> None:
        # Loaded on a terminal only: a run logging to a file or pipe never draws the table.
        from rich.live import Live

        from evaltally.terminal import VisibleConsole

        # Markup off: lane names are model keys, user text (`gpt-4o[t=0]`).
        console = VisibleConsole(file=self.stream, markup=False, highlight=False)
        with Live(render_table(self.lanes), console=console, refresh_per_second=4) as live:
            while not await self._tick(0.25):
                live.update(render_table(self.lanes))
            live.update(render_table(self.lanes))

    async def _log(self) -> None:
        while not await self._tick(LOG_EVERY_S):
            self._print_lines()
        self._print_lines()

    def _print_lines(self) -> None:
        for name, lane in self.lanes.items():
            print(visible(log_line(name, lane)), file=self.stream, flush=True)
