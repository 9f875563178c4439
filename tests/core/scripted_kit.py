"""A provider scripted as a function of the request, driving whole sessions through
`ScriptedTransport` on a virtual clock (the tier that never waits, docs/testing.md)."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import sqlite3
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import orjson

from evaltally.adapters.base import HttpRequest, HttpResponse
from evaltally.config import load_config
from evaltally.ledger import writer
from evaltally.run.session import SessionResult, run_session
from evaltally.runner.clock import VirtualClock
from evaltally.runner.scripted import ScriptedTransport
from testkit import FAKE_KEY, write_config, write_items

ENV = {"EVALTALLY_TEST_KEY": FAKE_KEY}
BASE_URL = "http://provider.invalid"
"""Never resolved: no request leaves the process."""
DEFAULTS: dict[str, float] = {
    "concurrency": 4,
    "backoff_initial_s": 2,
    "backoff_max_s": 30,
    "timeout_s": 60,
    "max_attempts": 5,
    "breaker_threshold": 1000,
}


def limits(**changes: float) -> str:
    """The lane's `[models.limits]`: DEFAULTS with `changes`."""
    return "\n".join(f"{k} = {v}" for k, v in {**DEFAULTS, **changes}.items())


def answer(request: HttpRequest, status: int = 200, **headers: str) -> HttpResponse:
    """An OpenAI-shaped reply: the completion echoing the question, or an error body."""
    if status != 200:
        error = {"error": {"message": f"scripted {status}", "type": "scripted"}}
        return HttpResponse(status, headers, orjson.dumps(error))
    question = orjson.loads(request.body)["messages"][-1]["content"]
    body = {
        "id": "cmpl-1",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": f"re: {question}"},
             "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }  # fmt: skip
    return HttpResponse(200, {"content-type": "application/json", **headers}, orjson.dumps(body))


def question(request: HttpRequest) -> str:
    return str(orjson.loads(request.body)["messages"][-1]["content"])


SETTLE_TURNS = 50
"""Event-loop turns EventClock lets pass before it moves time on: far more than a call takes
between two waits (an answer recorded, the next request built, its start row committed)."""


class EventClock(VirtualClock):
    """Virtual time in which every wait ends at its own deadline, as in real time: time moves
    to the earliest deadline once the event loop has had SETTLE_TURNS turns since the last
    move (everything that could run has run). Where VirtualClock's waits add up, these
    overlap, so a test can ask when things happened while another task waited (the calls
    answered during one call's Retry-After). A wait for a thread (a large ledger batch, a
    read) is not seen: keep such sessions small."""

    def __init__(self, start: float = 0.0) -> None:
        super().__init__(start)
        self._due: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._driver: asyncio.Task[None] | None = None

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._due, (self.now + seconds, next(self._order), woken))
        if self._driver is None or self._driver.done():
            self._driver = loop.create_task(self._drive())
        await woken

    async def _drive(self) -> None:
        while self._due:
            for _ in range(SETTLE_TURNS):
                await asyncio.sleep(0)
            while self._due and self._due[0][2].done():  # its waiter was cancelled
                heapq.heappop(self._due)
            if self._due:
                self.now = max(self.now, self._due[0][0])
            while self._due and self._due[0][0] <= self.now:
                woken = heapq.heappop(self._due)[2]
                if not woken.done():
                    woken.set_result(None)


class Provider:
    """The scripted provider: `script(request, n)` answers the n-th request (from 1) for that
    question; every request is logged with the virtual time it was sent at. With a `latency`
    (seconds, or a function of the request's arrival number from 1), each answer comes that
    long after its request; `answers` logs when (time, question, status), `most_held` is the
    most requests held at once."""

    def __init__(
        self,
        clock: VirtualClock,
        script: Callable[[HttpRequest, int], HttpResponse],
        latency: float | Callable[[int], float] = 0.0,
    ) -> None:
        self.clock = clock
        self.script = script
        self.latency = latency
        self.seen: Counter[str] = Counter()
        self.log: list[tuple[float, str]] = []
        self.answers: list[tuple[float, str, int]] = []
        self.held = 0
        self.most_held = 0

    def __call__(self, request: HttpRequest) -> HttpResponse | Awaitable[HttpResponse]:
        q = question(request)
        self.seen[q] += 1
        self.log.append((self.clock.now, q))
        response = self.script(request, self.seen[q])
        latency = self.latency(len(self.log)) if callable(self.latency) else self.latency
        return self._after(latency, q, response) if latency else response

    async def _after(self, latency: float, q: str, response: HttpResponse) -> HttpResponse:
        self.held += 1
        self.most_held = max(self.most_held, self.held)
        try:
            await self.clock.sleep(latency)
        finally:
            self.held -= 1
        self.answers.append((self.clock.now, q, response.status))
        return response

    def times(self, q: str) -> list[float]:
        return [t for t, seen in self.log if seen == q]


@contextlib.contextmanager
def _commits_at_next_step(wanted: bool) -> Iterator[None]:
    """An EventClock moves virtual time once the loop has settled, and cannot see the ledger
    writer's group window (real time, ledger/writer.py): a request waiting for its start row's
    commit would look settled. With `wanted`, the writer commits at the next loop step instead,
    as it did before the window; the window's own effect is measured in bench/."""
    if not wanted:
        yield
        return
    held = writer.GROUP_WINDOW_S
    writer.GROUP_WINDOW_S = 0.0
    try:
        yield
    finally:
        writer.GROUP_WINDOW_S = held


async def run(
    tmp_path: Path, provider: Provider, n: int, turns: int = 0, **changes: float
) -> tuple[SessionResult, Path]:
    """`n` items (chains of `turns` user turns, "chain {i} turn {t}"; else one-step
    "question {i}") through `provider`, the lane's limits DEFAULTS with `changes`."""
    write_items(tmp_path / "items.jsonl", n, turns=turns)
    config = load_config(write_config(tmp_path, BASE_URL, limits=limits(**changes)))
    transport = ScriptedTransport(provider)
    with _commits_at_next_step(isinstance(provider.clock, EventClock)):
        result = await run_session(
            config,
            command="test",
            env=ENV,
            transport=transport,
            clock=provider.clock.monotonic,
            sleep=provider.clock.sleep,
        )
    assert not transport.closed  # an injected transport belongs to the caller
    return result, config.run_dir


def attempt_errors(run_dir: Path) -> Counter[str | None]:
    with sqlite3.connect(run_dir / "ledger.sqlite") as db:
        rows = db.execute("SELECT error_class FROM attempts WHERE kind = 'end'").fetchall()
    return Counter(r[0] for r in rows)
