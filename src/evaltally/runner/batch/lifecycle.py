"""One batch's life at the provider: submit (upload, then create, or find it again when the
create's answer was lost), wait for it to end, download its results.

Everything the provider could act on is in the ledger first: the batch, its members and their
attempts are flushed before the upload; `creating` is flushed before the create request leaves.
So after a kill at any point, the ledger tells resume whether a batch may exist at the provider,
and resume looks for it (by our key in its metadata or display name, by its file, or by its
creation time and size) before it would ever send those calls again.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass, field
from typing import cast

from evaltally.adapters.base import Endpoint
from evaltally.adapters.batch.base import (
    BatchAdapter,
    BatchPhase,
    BatchStatus,
    LineResult,
    Marker,
    not_run,
)
from evaltally.adapters.batch.results import Unreadable
from evaltally.errors import ProviderError
from evaltally.ledger import Ledger
from evaltally.ledger.batches import BatchBook
from evaltally.records import AttemptError, ErrorAction, Message, PlannedCall
from evaltally.runner import clock as clk
from evaltally.runner.batch.control import BatchControlError, Control
from evaltally.runner.batch.cursor import ChainCursor
from evaltally.runner.call import LaneUnit

CLOCK_SKEW_S = 120.0
"""How far the provider's clock may run behind ours when a batch is matched by creation time."""
MAX_LIST_PAGES = 20


@dataclass
class Member:
    """One call in a batch."""

    call: PlannedCall
    attempt: int
    rhash: str
    cursor: ChainCursor | None
    """The chain waiting on this answer (None: nothing waits, the line is only recorded)."""
    body: bytes = b""
    messages: list[Message] | None = None
    """What was rendered this session (empty for a batch an earlier session submitted)."""
    retry: bool = False
    """Its line was a retryable failure: the call goes to a later round."""


@dataclass
class Batch:
    key: str
    round: int
    members: list[Member]
    started: float
    provider_id: str | None = None
    file_id: str | None = None
    creating_at: float | None = None
    requests: int = 0
    """Requests the provider holds (members whose line is already read included)."""


@dataclass
class Collected:
    lines: dict[str, LineResult] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)

    def add(self, line: LineResult | Unreadable) -> None:
        if isinstance(line, Unreadable):
            self.unreadable.append(line.reason)
        else:
            self.lines.setdefault(line.call_id, line)

    def missing(self, phase: str) -> AttemptError:
        """What a member without a result line is recorded with (then sent again)."""
        detail = f"the batch ended {phase} without a result for this call"
        if self.unreadable:
            more = f" (and {len(self.unreadable) - 1} more)" if len(self.unreadable) > 1 else ""
            detail += f"; unusable result lines: {self.unreadable[0]}{more}"
        return not_run("batch_no_result", detail)


class Lifecycle:
    def __init__(
        self,
        unit: LaneUnit,
        adapter: BatchAdapter,
        control: Control,
        ledger: Ledger,
        sleep: clk.Sleep = clk.sleep,
    ) -> None:
        assert unit.endpoint is not None and unit.model.batch is not None
        self.unit = unit
        self.endpoint: Endpoint = unit.endpoint
        self.adapter = adapter
        self.control = control
        self.ledger = ledger
        self.book: BatchBook = ledger.batch_book()
        self.sleep = sleep
        self.poll_s = unit.model.batch.poll_s
        self.unknown_state_s = unit.model.batch.unknown_state_s
        # One create in flight per model: after a kill, at most one batch of it can be
        # "maybe created", so finding it again by creation time and size is unambiguous.
        self._creating = asyncio.Lock()

    async def submit(self, batch: Batch, payload: bytes) -> None:
        members = [(m.call.call_id, m.attempt) for m in batch.members]
        self.book.planned(
            batch.key, self.unit.model.key, batch.round, self.adapter.kind, members, payload
        )
        for m in batch.members:
            self.ledger.attempt_started(m.call.call_id, m.attempt, m.rhash, m.body)
        await self.book.flush()
        upload = self.adapter.upload_request(self.endpoint, batch.key, payload)
        if upload is not None:
            batch.file_id = await self.control.call("upload", upload, self.adapter.read_upload)
            self.book.event(batch.key, "uploaded", provider_id=batch.file_id)
        async with self._creating:
            await self._create(batch, payload)

    async def _create(self, batch: Batch, payload: bytes) -> None:
        request = self.adapter.create_request(self.endpoint, batch.key, payload, batch.file_id)
        attempt = 1
        while True:
            batch.creating_at = time.time()
            self.book.event(batch.key, "creating")
            await self.book.flush()
            result = await self.control.once(request, self.adapter.read_created)
            if not isinstance(result, AttemptError):
                self.created(batch, result)
                return
            if result.action is ErrorAction.RETRY:
                # The batch may exist even though its answer was lost: look before resending.
                found = await self.find(batch)
                if found is not None:
                    self.created(batch, found, "found again after the create answer was lost")
                    return
            await self.control.pause_or_raise("create", result, attempt)
            attempt += 1

    def created(self, batch: Batch, provider_id: str, detail: str | None = None) -> None:
        batch.provider_id = provider_id
        self.book.event(batch.key, "created", provider_id=provider_id, detail=detail)

    async def find(self, batch: Batch) -> str | None:
        """The provider's id of `batch` if it was created although we never recorded it."""
        since = batch.creating_at if batch.creating_at is not None else batch.started
        marker = Marker(
            batch.key,
            batch.file_id,
            batch.requests,
            since - CLOCK_SKEW_S,
            await self.book.provider_ids(),
        )
        page: str | None = None
        for _ in range(MAX_LIST_PAGES):
            request = self.adapter.list_request(self.endpoint, page)
            found, page = await self.control.call(
                "list", request, lambda r: self.adapter.find(r, marker)
            )
            if found is not None or page is None:
                return found
        return None

    async def wait(self, batch: Batch) -> BatchStatus:
        """Poll until the batch ended; every poll that sees a new state is recorded."""
        provider_id = cast(str, batch.provider_id)
        request = self.adapter.status_request(self.endpoint, provider_id)
        last: str | None = None
        unknown_for = 0.0
        while True:
            status = await self.control.call("poll", request, self.adapter.read_status)
            if status.provider_state != last:
                last = status.provider_state
                self.book.event(
                    batch.key,
                    "state",
                    provider_id=provider_id,
                    state=status.provider_state,
                    counts=status.counts,
                    detail=status.detail,
                )
            if status.phase.ended:
                return status
            unknown_for = unknown_for + self.poll_s if status.phase is BatchPhase.UNKNOWN else 0.0
            if unknown_for > self.unknown_state_s:
                raise BatchControlError("poll", unknown_state(status, self.unknown_state_s))
            await self.sleep(self.poll_s)

    async def collect(self, batch: Batch, status: BatchStatus) -> Collected:
        """Every result line of an ended batch, by call id, and why any line was unusable.
        Each document goes to a temporary file in the run directory and is read from there
        line by line: memory does not grow with the file."""
        self.book.event(batch.key, "downloading")
        await self.book.flush()
        provider_id = cast(str, batch.provider_id)
        ids = [m.call.call_id for m in batch.members]
        collected = Collected()
        for ref in status.results:
            request = self.adapter.download_request(self.endpoint, provider_id, ref)
            with tempfile.TemporaryFile(dir=self.book.path.parent, prefix=".batch-") as sink:
                await self.control.download(request, sink)
                sink.seek(0)
                try:
                    for line in self.adapter.read_results(sink, ids):
                        collected.add(line)
                except ProviderError as exc:
                    collected.unreadable.append(str(exc))
        return collected


def unknown_state(status: BatchStatus, waited_s: float) -> AttemptError:
    return AttemptError(
        ErrorAction.FAIL_CALL,
        "unknown_batch_state",
        f"the provider kept reporting the state {status.provider_state[:80]!r}, which this "
        f"version does not know, for over {waited_s:g}s (batch.unknown_state_s)",
    )
