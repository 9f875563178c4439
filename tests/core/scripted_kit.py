"""A provider scripted as a function of the request, driving whole sessions through
`ScriptedTransport` on a virtual clock (the tier that never waits, docs/testing.md)."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson

from evaltally.adapters.base import HttpRequest, HttpResponse
from evaltally.config import load_config
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


class Provider:
    """The scripted provider: `script(request, n)` answers the n-th request (from 1) for that
    question; every request is logged with the virtual time it was sent at."""

    def __init__(
        self, clock: VirtualClock, script: Callable[[HttpRequest, int], HttpResponse]
    ) -> None:
        self.clock = clock
        self.script = script
        self.seen: Counter[str] = Counter()
        self.log: list[tuple[float, str]] = []

    def __call__(self, request: HttpRequest) -> HttpResponse:
        q = question(request)
        self.seen[q] += 1
        self.log.append((self.clock.now, q))
        return self.script(request, self.seen[q])

    def times(self, q: str) -> list[float]:
        return [t for t, seen in self.log if seen == q]


async def run(
    tmp_path: Path, provider: Provider, n: int, **changes: float
) -> tuple[SessionResult, Path]:
    write_items(tmp_path / "items.jsonl", n)
    config = load_config(write_config(tmp_path, BASE_URL, limits=limits(**changes)))
    transport = ScriptedTransport(provider)
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
