"""The parent of a fork: a recorded chain of another run, and what the fork takes from it.

Read only: the parent's config copy (to load the benchmark that rendered the chain) and its
ledger opened read-only (ledger/recorded.py). Steps before the fork step must have recorded
answers; the fork shows them to the model exactly as the parent's step `at` saw them (an
answer recorded after step `at` was sent — a failed step re-sent by a resume — shows as the
failure it then was), so the fork's first request is the parent's own request at `at`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evaltally.benchmarks.base import Benchmark, ReusedRequest, StepAnswer
from evaltally.benchmarks.registry import load_benchmark
from evaltally.config import SweepConfig
from evaltally.config.run_dir import load_run_config
from evaltally.errors import DataError, LedgerError
from evaltally.ledger.recorded import read_chain, resolve_chain
from evaltally.ledger.results import PendingChain, RecordedAnswer
from evaltally.records import PlannedCall, Status, content_hash


class ParentError(DataError):
    """A parent that cannot be forked as asked; `key` is the fork option to fix."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        super().__init__(message)


@dataclass
class ParentChain:
    run_dir: Path
    config: SweepConfig
    bench: Benchmark
    """The parent's benchmark that planned and rendered the chain."""
    chain: PendingChain
    at: int

    @property
    def calls(self) -> list[PlannedCall]:
        return self.chain.calls

    @property
    def chain_id(self) -> str:
        return self.chain.chain_id

    def seen_by(self, step: int) -> list[StepAnswer]:
        """The recorded answers of the steps before `step`, as they stood when `step` was sent
        (every answer, when `step` has none recorded)."""
        sent = self.chain.recorded.get(step)
        return [_as_seen(self.chain.recorded[s], s, sent) for s in range(step)]

    def prefix(self) -> list[StepAnswer]:
        """What every replay starts from: the answers before the fork step."""
        return self.seen_by(self.at)

    def recorded(self, step: int) -> RecordedAnswer | None:
        return self.chain.recorded.get(step)

    def prefix_sha256(self) -> str:
        """Hash of what the fork reuses: each prefix step's request hash and recorded answer."""
        return content_hash(
            [[a.status.value, a.raw_text, self.chain.recorded[a.step].request_hash]
             for a in self.prefix()]
        )  # fmt: skip

    def reused_requests(self) -> list[ReusedRequest]:
        """Every recorded request up to the fork step (included), to be re-built byte for byte
        before the fork sends anything."""
        models = {m.key: m for m in self.config.models}
        out = []
        for call in self.calls[: self.at + 1]:
            answer = self.chain.recorded.get(call.step)
            if answer is None or answer.request_hash is None or call.model not in models:
                continue
            out.append(
                ReusedRequest(
                    model=models[call.model],
                    messages=self.bench.render(call, self.seen_by(call.step)),
                    request_hash=answer.request_hash,
                    where=(
                        f"run {self.run_dir} chain {self.chain_id} step {call.step} "
                        f"(call {call.call_id})"
                    ),
                )
            )
        return out


def _as_seen(answer: RecordedAnswer, step: int, sent: RecordedAnswer | None) -> StepAnswer:
    if sent is not None and answer.seq > sent.seq:
        return StepAnswer(step, Status.FAILED, None, None)
    return StepAnswer(step, answer.status, answer.raw_text, answer.parsed)


def load_parent(run_dir: Path, chain_ref: str, at: int) -> ParentChain:
    """The parent chain `chain_ref` of run `run_dir`, checked for a fork at step `at`."""
    try:
        config = load_run_config(run_dir)
    except LedgerError as exc:
        raise ParentError("parent", str(exc)) from None
    try:
        chain = read_chain(run_dir, resolve_chain(run_dir, chain_ref))
    except LedgerError as exc:
        raise ParentError("chain", str(exc)) from None
    if not 0 <= at < len(chain.calls):
        raise ParentError(
            "at",
            f"chain {chain.chain_id} has steps 0-{len(chain.calls) - 1}; a fork at step {at} "
            "has nothing to sample",
        )
    missing = [s for s in range(at) if s not in chain.recorded]
    if missing:
        raise ParentError(
            "at",
            f"chain {chain.chain_id}: step {missing[0]} has no recorded answer (it failed, was "
            f"blocked or never ran); a fork at step {at} reuses steps 0-{at - 1} as recorded",
        )
    label = chain.calls[0].benchmark
    bconf = next((b for b in config.benchmarks if b.label == label), None)
    if bconf is None:
        raise ParentError("parent", f"{run_dir}: its config has no benchmark {label!r} any more")
    return ParentChain(Path(run_dir).resolve(), config, load_benchmark(bconf), chain, at)
