"""One batch-mode model's chains, in rounds.

A round takes the next unanswered call of every chain that can move (step k of a chain whose
step k-1 is answered; every call of an independent chain), renders it exactly as the synchronous
path would, checks the budget, cuts the calls into as many batches as the provider's limits
require, submits them, waits for all of them to end and records every line. Calls whose line
was a retryable failure go to the next round (or, with `batch_fallback = "sync"`, to the
synchronous API at once). Before the first round, the batches an earlier session left open are
found again and finished: their calls are never sent a second time while they may answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections import Counter
from typing import cast

from evaltally.adapters.base import HttpAdapter
from evaltally.adapters.batch import batch_adapter
from evaltally.adapters.batch.base import BatchItem, BatchLimits, LineResult, not_run, split
from evaltally.ledger import RecordedAnswer, request_hash
from evaltally.ledger.batches import OpenBatch
from evaltally.records import AttemptError, PlannedCall, Status
from evaltally.runner.batch.context import BatchContext
from evaltally.runner.batch.control import BatchControlError, Control
from evaltally.runner.batch.cursor import ChainCursor, Proof
from evaltally.runner.batch.lifecycle import Batch, Lifecycle, Member
from evaltally.runner.batch.lines import LineRecorder
from evaltally.runner.call import CallResult, LaneUnit, request_body
from evaltally.runner.lane import LaneStopped
from evaltally.runner.scheduler import ChainWork
from evaltally.tokens import count_messages


class ModelRounds:
    def __init__(self, context: BatchContext, unit: LaneUnit, work: list[ChainWork]) -> None:
        assert unit.model.batch is not None
        self.context = context
        self.scheduler = context.scheduler
        self.unit = unit
        self.settings = unit.model.batch
        self.adapter = batch_adapter(self.settings.kind, cast(HttpAdapter, unit.adapter))
        control = Control(unit, context.transport, context.sleep)
        self.life = Lifecycle(unit, self.adapter, control, self.scheduler.ledger, context.sleep)
        self.lines = LineRecorder(unit, self.scheduler.ledger, self._record)
        self.limits = BatchLimits(self.settings.max_requests, self.settings.max_bytes)
        benchmarks = self.scheduler.benchmarks
        self.cursors = [ChainCursor(w, benchmarks[w.chain.calls[0].benchmark]) for w in work]

    async def run(self) -> None:
        self._ready()  # places every cursor on the call it waits for
        for open_batch in await self.life.book.open_batches(self.unit.model.key):
            await self._recover(open_batch)
        round_no = await self.life.book.last_round(self.unit.model.key)
        while ready := self._ready():
            round_no += 1
            await self._round(round_no, ready)

    # -- chains ------------------------------------------------------------------------------

    def _record(self, call: PlannedCall, result: CallResult) -> None:
        self.scheduler.record(self.unit, call, result)

    def _prove(self, cursor: ChainCursor) -> Proof:
        def prove(call: PlannedCall, work: ChainWork, recorded: RecordedAnswer) -> str | None:
            return self.scheduler.check_recorded(self.unit, cursor.bench, call, work, recorded)

        return prove

    def _ready(self) -> list[tuple[ChainCursor, PlannedCall]]:
        stop = self.unit.lane.stop_reason or (self.scheduler.budget and self.scheduler.budget())
        ready = []
        for cursor in self.cursors:
            call = cursor.advance(self._prove(cursor), self._record, stop or None)
            if call is not None:
                ready.append((cursor, call))
        return ready

    # -- a round -----------------------------------------------------------------------------

    async def _round(self, round_no: int, ready: list[tuple[ChainCursor, PlannedCall]]) -> None:
        members = self._within_budget([self._member(cursor, call) for cursor, call in ready])
        by_id = {m.call.call_id: m for m in members}
        items = [BatchItem(m.call.call_id, m.body) for m in members]
        groups, oversize = split(items, self.limits, self.adapter.item_bytes)
        for item in oversize:
            member = by_id[item.call_id]
            reason = (
                f"request of {self.adapter.item_bytes(item):,} bytes exceeds the batch limit of "
                f"{self.limits.max_bytes:,} bytes"
            )
            cast(ChainCursor, member.cursor).finish(
                member.call, CallResult(Status.FAILED, reason=reason), self._record
            )
        async with asyncio.TaskGroup() as group:
            for items_of_batch in groups:
                batch_members = [by_id[i.call_id] for i in items_of_batch]
                group.create_task(self._one(round_no, batch_members, items_of_batch))
        retry = [m for m in members if m.retry]
        if retry and self.settings.fallback == "sync":
            await self._fallback(retry)
        else:
            self.unit.lane.stats.retries += len(retry)

    def _member(self, cursor: ChainCursor, call: PlannedCall) -> Member:
        messages = cursor.bench.render(call, cursor.earlier)
        body = request_body(self.unit, messages)
        attempt = cursor.next_attempt(call)
        return Member(call, attempt, request_hash(body), cursor, body, messages)

    def _within_budget(self, members: list[Member]) -> list[Member]:
        """The members whose estimated batch cost (input estimate + max_tokens at the batch
        price) fits in what is left of the budget; the rest are recorded blocked."""
        budget, price = self.context.budget, self.unit.model.price
        if budget is None or price is None:
            return members
        left = budget.limit - budget.spent()
        max_out = int(self.unit.model.params.get("max_tokens", 0) or 0)
        total = 0.0
        for i, member in enumerate(members):
            cost = price.usd(count_messages(member.messages or []), max_out)
            if total + cost > left:
                reason = (
                    f"budget of ${budget.limit:.2f}: submitting this call would bring the batch's "
                    f"estimated cost past the ${left:.2f} left; continue with "
                    "`tally resume RUN --budget USD`"
                )
                for rest in members[i:]:
                    blocked = CallResult(Status.BLOCKED, reason=reason)
                    cast(ChainCursor, rest.cursor).finish(rest.call, blocked, self._record)
                return members[:i]
            total += cost
        return members

    async def _one(self, round_no: int, members: list[Member], items: list[BatchItem]) -> None:
        key = self._key(round_no, members)
        batch = Batch(key, round_no, members, time.time(), requests=len(members))
        self.unit.lane.stats.in_flight += len(members)
        self.unit.lane.stats.attempts += len(members)
        try:
            await self.life.submit(batch, self.adapter.payload(key, items))
        except BatchControlError as exc:
            await self._settle(batch, {}, "not_created", exc.error)
            return
        await self._finish(batch)

    async def _finish(self, batch: Batch) -> None:
        try:
            status = await self.life.wait(batch)
            collected = await self.life.collect(batch, status)
        except BatchControlError as exc:
            self._hold(batch, f"could not be polled or downloaded ({exc})")
            return
        missing = collected.missing(status.phase.value)
        await self._settle(batch, collected.lines, status.phase.value, missing)

    async def _settle(
        self, batch: Batch, lines: dict[str, LineResult], state: str, otherwise: AttemptError
    ) -> None:
        counts: Counter[str] = Counter()
        for member in batch.members:
            counts[self.lines.apply(batch, member, lines.get(member.call.call_id, otherwise))] += 1
        self.life.book.event(
            batch.key, "closed", provider_id=batch.provider_id, state=state, counts=counts
        )
        await self.life.book.flush()

    def _hold(self, batch: Batch, why: str) -> None:
        """The provider may still answer this batch, but it cannot be followed now: it stays
        open in the ledger, its calls wait for it (never sent again), and the lane stops so the
        run ends incomplete; `tally resume` picks the batch up."""
        for member in batch.members:
            if member.cursor is not None:
                member.cursor.held = True
        self.unit.lane.stats.in_flight -= len(batch.members)
        self.unit.lane.stop(
            f"{self.unit.model.key}: batch {batch.key} {why}; it is left open and its calls wait "
            "for it: `tally resume` the run to collect it"
        )

    def _key(self, round_no: int, members: list[Member]) -> str:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", self.unit.model.key).strip("-")[:24] or "model"
        seed = f"{self.life.book.path}|{slug}|{round_no}|{time.time_ns()}|{members[0].call.call_id}"
        return f"et-{slug}-r{round_no}-{hashlib.sha256(seed.encode()).hexdigest()[:12]}"

    # -- resume ------------------------------------------------------------------------------

    async def _recover(self, open_batch: OpenBatch) -> None:
        waiting: dict[str, ChainCursor] = {}
        for cursor in self.cursors:
            current = cursor.current()
            if current is not None:
                waiting[current.call_id] = cursor
        members = []
        for call_id, attempt, rhash in open_batch.members:
            if call_id in open_batch.ended:
                continue
            waiter = waiting.get(call_id)
            if waiter is not None:
                members.append(Member(cast(PlannedCall, waiter.current()), attempt, rhash, waiter))
            else:
                # Nothing waits on this line (cannot happen while a plan only grows); its
                # attempt is still closed, so the batch can close.
                orphan = PlannedCall(call_id, "", 0, self.unit.model.key, "", "", 0, "")
                members.append(Member(orphan, attempt, rhash, None))
        planned = open_batch.events[0].at if open_batch.events else time.time()
        creating = open_batch.last("creating")
        batch = Batch(
            open_batch.key,
            open_batch.round,
            members,
            planned,
            provider_id=open_batch.provider_id,
            file_id=open_batch.file_id,
            creating_at=creating.at if creating else None,
            requests=len(open_batch.members),
        )
        self.unit.lane.stats.in_flight += len(members)
        if batch.provider_id is None and creating is not None:
            try:
                found = await self.life.find(batch)
            except BatchControlError as exc:
                self._hold(batch, f"may have been created: the provider's list failed ({exc})")
                return
            if found is not None:
                self.life.created(batch, found, "found again on resume")
        if batch.provider_id is None:
            never = not_run("batch_not_created", "the run stopped before the batch was created")
            await self._settle(batch, {}, "not_created", never)
            return
        await self._finish(batch)

    # -- batch_fallback = "sync" -------------------------------------------------------------

    async def _fallback(self, members: list[Member]) -> None:
        """Retry the calls whose batch line failed on the synchronous API, now."""
        gate = asyncio.Semaphore(self.unit.model.limits.concurrency)

        async def one(member: Member) -> None:
            cursor = cast(ChainCursor, member.cursor)
            messages = member.messages or cursor.bench.render(member.call, cursor.earlier)
            async with gate:
                try:
                    result = await self.scheduler.executor.run(
                        self.unit, member.call, messages, cursor.bench, member.attempt
                    )
                except LaneStopped as stopped:
                    result = CallResult(Status.BLOCKED, reason=str(stopped))
            cursor.finish(member.call, result, self._record)
            self._charge_list_price(result)

        async with asyncio.TaskGroup() as group:
            for member in members:
                if member.cursor is not None:
                    group.create_task(one(member))

    def _charge_list_price(self, result: CallResult) -> None:
        """A synchronous call costs the list price; the lane counted it at the batch price."""
        batch_price, list_price = self.unit.model.price, self.settings.list_price
        usage = result.usage
        if usage is None or batch_price is None or list_price is None:
            return
        extra = list_price.usd(usage.input_tokens, usage.output_tokens) - batch_price.usd(
            usage.input_tokens, usage.output_tokens
        )
        self.unit.lane.stats.cost_usd += extra
