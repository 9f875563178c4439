"""Helpers for the batch tests: drive one batch through a batch adapter against a real mock
provider on 127.0.0.1, and write sweep configs whose models run in batch mode."""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaltally.adapters import http_adapter
from evaltally.adapters.base import Endpoint, HttpAdapter, HttpResponse
from evaltally.adapters.batch import batch_adapter
from evaltally.adapters.batch.base import BatchAdapter, BatchItem, BatchStatus, LineResult
from evaltally.records import AttemptError, Completion
from evaltally.runner.transport import AiohttpTransport

FAST = {
    "batch_validating_s": 0.01,
    "batch_in_progress_s": 0.03,
    "batch_finalizing_s": 0.01,
}
KINDS = ("openai", "anthropic", "gemini")


def base_url(kind: str, mock_url: str) -> str:
    return mock_url + "/v1" if kind == "openai" else mock_url


@dataclass
class Driven:
    """One batch driven by hand: its adapter, endpoint and what the provider said."""

    kind: str
    sync: HttpAdapter
    adapter: BatchAdapter
    endpoint: Endpoint
    transport: AiohttpTransport
    items: list[BatchItem] = field(default_factory=list)
    provider_id: str = ""
    phases: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, kind: str, mock_url: str) -> Driven:
        sync = http_adapter(kind)
        endpoint = Endpoint("mock-model", base_url(kind, mock_url), "sk-mock", {"max_tokens": 16})
        return cls(kind, sync, batch_adapter(kind, sync), endpoint, AiohttpTransport())

    def body(self, text: str) -> bytes:
        return self.sync.build_request(self.endpoint, [{"role": "user", "content": text}]).body

    async def send(self, request: Any) -> HttpResponse:
        return await self.transport.send(request, 10, 1 << 30)

    async def submit(self, texts: list[str], key: str = "key-1") -> str:
        self.items = [BatchItem(f"call{i}", self.body(t)) for i, t in enumerate(texts)]
        payload = self.adapter.payload(key, self.items)
        file_id = None
        upload = self.adapter.upload_request(self.endpoint, key, payload)
        if upload is not None:
            file_id = self.adapter.read_upload(await self.send(upload))
            assert isinstance(file_id, str)
        created = await self.send(self.adapter.create_request(self.endpoint, key, payload, file_id))
        assert created.status == 200, created.body
        provider_id = self.adapter.read_created(created)
        assert isinstance(provider_id, str)
        self.provider_id = provider_id
        return provider_id

    async def status(self) -> BatchStatus:
        answer = await self.send(self.adapter.status_request(self.endpoint, self.provider_id))
        status = self.adapter.read_status(answer)
        assert isinstance(status, BatchStatus), status
        return status

    async def wait(self, timeout_s: float = 10.0) -> BatchStatus:
        async with asyncio.timeout(timeout_s):
            while True:
                status = await self.status()
                if not self.phases or self.phases[-1] != status.phase.value:
                    self.phases.append(status.phase.value)
                if status.phase.ended:
                    return status
                await asyncio.sleep(0.005)

    async def results(self, status: BatchStatus) -> dict[str, Completion | AttemptError]:
        out: dict[str, Completion | AttemptError] = {}
        ids = [i.call_id for i in self.items]
        for ref in status.results:
            answer = await self.send(
                self.adapter.download_request(self.endpoint, self.provider_id, ref)
            )
            for line in self.adapter.read_results(io.BytesIO(answer.body), ids):
                assert isinstance(line, LineResult), line
                outcome = line.outcome
                out[line.call_id] = (
                    self.sync.parse_response(outcome)
                    if isinstance(outcome, HttpResponse)
                    else outcome
                )
        return out


def batch_sweep(
    path: Path,
    mock_url: str,
    *,
    name: str,
    mode: str,
    kinds: tuple[str, ...] = KINDS,
    benchmark: str,
    model_extra: str = "",
    batch_table: str = "poll_s = 0.01",
    limits: str = "concurrency = 8\nbackoff_initial_s = 0.01\nbackoff_max_s = 0.05",
) -> Path:
    """A config with one model per API shape, all in `mode`, on the mock at `mock_url`."""
    blocks = [f'[run]\nname = "{name}"\nruns_dir = "runs"\n']
    for kind in kinds:
        batch = (
            f'mode = "batch"\n{model_extra}[models.batch]\n{batch_table}\n'
            if mode == "batch"
            else ""
        )
        blocks.append(
            f'[[models]]\nkey = "{kind}-model"\nprovider = "{kind}"\nmodel = "mock-{kind}"\n'
            f'base_url = "{base_url(kind, mock_url)}"\napi_key_env = "EVALTALLY_TEST_KEY"\n'
            f"{batch}[models.params]\nmax_tokens = 64\n[models.limits]\n{limits}\n"
        )
    blocks.append(benchmark)
    path.write_text("\n".join(blocks))
    return path


CTE_TWO = '[[benchmarks]]\nkind = "cte"\ndata = "builtin"\nlimit = 2\n'
VOLATILE = {"latency_ms", "attempts"}


def prompts_benchmark(path: Path, n: int, *, turns: int = 0) -> str:
    """A prompts benchmark block over `n` items written to `path` (chains when `turns`)."""
    from testkit import write_items

    write_items(path, n, turns=turns)
    return f'[[benchmarks]]\nkind = "prompts"\npath = "{path.name}"\n'


async def run(config: Path, **options: Any) -> Any:
    """`tally run` in this process (same code path as the command)."""
    import io

    from evaltally.config import load_config
    from evaltally.run.session import run_session
    from testkit import FAKE_KEY

    return await run_session(
        load_config(config),
        command="pytest",
        env={"EVALTALLY_TEST_KEY": FAKE_KEY},
        progress=io.StringIO(),
        **options,
    )


def export_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The run's export, every field but latency and attempts, in call-id order."""
    import orjson

    from evaltally.ledger import export_run

    out = run_dir / "export-test.jsonl"
    export_run(run_dir, out, force=True)  # the same run is exported again after a resume
    rows = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    return sorted(
        ({k: v for k, v in r.items() if k not in VOLATILE} for r in rows),
        key=lambda r: r["call_id"],
    )


def answered_bodies(run_dir: Path) -> dict[str, int]:
    """Request hash -> how many planned calls have an answer sent with that body. Distinct calls
    may share a body (a CTE rollout's first steps show what answers_revealed shows), so this,
    not 1, is how often the provider may have answered each body."""
    import sqlite3
    from collections import Counter

    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    try:
        rows = conn.execute(
            "SELECT request_hash FROM outcomes WHERE status IN ('ok', 'parse_error')"
        ).fetchall()
    finally:
        conn.close()
    return dict(Counter(h for (h,) in rows))
