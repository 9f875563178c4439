"""Fork-resampling of a recorded chain as a benchmark: replays of a parent chain from step `at`.

A fork run's chains are new planned calls: one chain per replay (the replay is the chain's
`sample`, so its id derives from the binding, the parent chain id, the fork step and the replay
index), holding the parent's steps `at`, `at + 1`, ... Nothing of the parent is copied into the
new ledger: each replay step is rendered by the parent's own benchmark from the parent's
recorded answers before `at` and the replay's own answers since, and the request actually sent
is what the new ledger stores. Before anything is sent, the parent's recorded requests up to
`at` must re-build byte for byte (`reused_requests`), so the prefix a replay continues is the
one the parent's model saw. docs/fork.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaltally.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    ChainTemplate,
    DataSource,
    OptionError,
    ParseResult,
    ReusedRequest,
    StepAnswer,
)
from evaltally.config import BenchmarkConfig
from evaltally.errors import DataError
from evaltally.ledger.files import ledger_path
from evaltally.records import JSONValue, Message, PlannedCall, content_hash

from .parent import ParentChain, ParentError, load_parent
from .stats import parse_bucket_spec


@dataclass(frozen=True)
class ForkOptions(BenchmarkOptions):
    parent: str
    """The parent run directory."""
    chain: str
    """The parent chain: its id, or a unique prefix of at least 6 hex characters."""
    at: int
    """The first step sampled anew (0-based, as the export's `step`); steps before it are the
    recorded prefix."""
    bucket: str = "value"
    """How answers at the fork step are bucketed for the entropy: `value` or key paths."""

    def check(self) -> None:
        if self.at < 0:
            raise OptionError("at", f"must be >= 0, got {self.at}")
        check_bucket(self.bucket)


def check_bucket(spec: str) -> None:
    """The `bucket` option (a fork's, an estimate's) as `stats.parse_bucket_spec` reads it."""
    try:
        parse_bucket_spec(spec)
    except ValueError as exc:
        raise OptionError("bucket", str(exc)) from None


class ForkBenchmark(Benchmark):
    kind = "fork"
    Options = ForkOptions

    def __init__(self, config: BenchmarkConfig) -> None:
        super().__init__(config)
        opts: ForkOptions = self.options
        try:
            self.parent: ParentChain = load_parent(self.path(opts.parent), opts.chain, opts.at)
        except ParentError as exc:
            raise self.fail(exc.key, str(exc)) from exc
        self.at = opts.at
        # Steps after a failure render as the parent's benchmark renders them.
        self.on_failed_step = self.parent.bench.on_failed_step
        self._prefix = self.parent.prefix()

    def chains(self) -> Iterator[ChainTemplate]:
        p = self.parent
        first = p.calls[0]
        steps = tuple({"parent_step": c.step, "parent_call": c.call_id} for c in p.calls[self.at :])
        identity = {"parent_chain": p.chain_id, "at": self.at}
        yield ChainTemplate(first.item_id, content_hash(identity, 32), first.protocol, steps)

    def _parent_call(self, call: PlannedCall) -> PlannedCall:
        step = int(call.spec["parent_step"])
        parent = self.parent.calls[step] if step < len(self.parent.calls) else None
        if parent is None or parent.call_id != call.spec["parent_call"]:
            raise DataError(f"call {call.call_id}: the parent chain has no call {call.spec}")
        return parent

    def _parent_earlier(self, earlier: Sequence[StepAnswer]) -> list[StepAnswer]:
        """The parent chain's answers as a parent step sees them: the recorded prefix, then
        this replay's own answers renumbered to the parent's steps."""
        own = [StepAnswer(self.at + a.step, a.status, a.raw_text, a.parsed) for a in earlier]
        return [*self._prefix, *own]

    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        return self.parent.bench.render(self._parent_call(call), self._parent_earlier(earlier))

    def parse(self, call: PlannedCall, text: str) -> ParseResult:
        return self.parent.bench.parse(self._parent_call(call), text)

    def offline_context(
        self, call: PlannedCall, earlier: Sequence[StepAnswer]
    ) -> Mapping[str, Any]:
        parent = self._parent_call(call)
        return self.parent.bench.offline_context(parent, self._parent_earlier(earlier))

    def export_fields(self, call: PlannedCall) -> Mapping[str, Any]:
        parent = self._parent_call(call)
        recorded = self.parent.recorded(parent.step)
        return {
            **self.parent.bench.export_fields(parent),
            "fork": {
                "parent_run": str(self.parent.run_dir),
                "parent_chain": self.parent.chain_id,
                "parent_kind": self.parent.bench.kind,
                "at": self.at,
                "bucket": self.options.bucket,
            },
            "parent_step": parent.step,
            "recorded": None
            if recorded is None
            else {"status": recorded.status.value, "parsed": recorded.parsed},
        }

    def data_sources(self) -> list[DataSource]:
        own = DataSource(
            str(ledger_path(self.parent.run_dir)),
            self.parent.prefix_sha256(),
            "the reused prefix (each step's request hash and recorded answer), not the file",
        )
        return [own, *self.parent.bench.data_sources()]

    def parents(self) -> list[dict[str, JSONValue]]:
        p = self.parent
        return [
            {
                "run": str(p.run_dir),
                "chain": p.chain_id,
                "benchmark": p.bench.label,
                "kind": p.bench.kind,
                "at": self.at,
                "prefix_sha256": p.prefix_sha256(),
            }
        ]

    def reused_requests(self) -> Sequence[ReusedRequest]:
        return self.parent.reused_requests()
