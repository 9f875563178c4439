"""DexBench as a runnable benchmark: instances -> one planned call per instance x task x sample.

Each (instance, task) is a chain of one step whose protocol is the task (`forward` or
`backward`); the planner repeats it for every sample, so `samples = 5` plans five calls, each
with its own stable id. A call's spec records the prompt version and, for backward, the mode
(`mutate`: the paper's task, the current input shown; `generate`: the ablation without it), so
a changed wording or mode plans new ids rather than mixing answers to two prompts.

Forward answers are graded from the export alone (the covered lines are an oracle field);
backward answers are verified through the contract's hook: `verification` hands each `ok`
answer to a worker process, which applies the literal rule and runs the program in a sandbox
(verify.py). docs/dexbench.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from evaltally.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    ChainTemplate,
    DataSource,
    OptionError,
    ParseResult,
    StepAnswer,
    VerificationJob,
    file_sha256,
)
from evaltally.config import BenchmarkConfig
from evaltally.errors import DataError
from evaltally.prompts import dexbench as prompts
from evaltally.records import Message, PlannedCall, content_hash
from evaltally.sandbox.boundary import MODES, OS, Boundary

from . import verify
from .instances import SOURCES, Instance, builtin_path, oracle_fields, read_instances
from .parse import parse_backward, parse_forward
from .predictors import PREDICTORS, context

FORWARD, BACKWARD = "forward", "backward"
TASKS = (FORWARD, BACKWARD)


@dataclass(frozen=True)
class DexOptions(BenchmarkOptions):
    data: str = "builtin"
    """"builtin" (the shipped CRUXEval + HumanEval instances) or a file `tally dex build`
    wrote (with PythonSaga, say)."""
    tasks: tuple[str, ...] = TASKS
    backward_mode: str = "mutate"
    """"mutate" (the paper's task: the current input is shown) or "generate" (its ablation)."""
    sources: tuple[str, ...] | None = None
    """Keep only these sources (cruxeval, humaneval, pythonsaga)."""
    limit: int | None = None
    """At most this many instances of each source, in file order."""
    prompt_version: str = prompts.PROMPT_VERSION
    """"dexbench-v1" only to resume a run planned with that wording."""
    sandbox: str = OS
    """Where backward answers are verified: "os" (bubblewrap namespaces; without bwrap nothing
    is verified) or "process" (the weaker process-only sandbox, chosen explicitly: a warning
    on every run, and the report says so)."""

    def check(self) -> None:
        if not self.data:
            raise OptionError("data", "must be 'builtin' or a path to an instance file")
        for key, values, valid in (
            ("tasks", self.tasks, TASKS),
            ("sources", self.sources or (), SOURCES),
        ):
            bad = [v for v in values if v not in valid]
            if bad:
                raise OptionError(key, f"unknown value {bad[0]!r}; valid: {', '.join(valid)}")
            if len(set(values)) != len(values):
                raise OptionError(key, "lists a value twice")
        if self.backward_mode not in prompts.BACKWARD_MODES:
            modes = ", ".join(prompts.BACKWARD_MODES)
            raise OptionError("backward_mode", f"must be one of: {modes}")
        if self.limit is not None and self.limit <= 0:
            raise OptionError("limit", f"must be > 0, got {self.limit}")
        if self.prompt_version not in prompts.PROMPT_VERSIONS:
            versions = ", ".join(prompts.PROMPT_VERSIONS)
            raise OptionError("prompt_version", f"must be one of: {versions}")
        if self.sandbox not in MODES:
            raise OptionError("sandbox", f"must be one of: {', '.join(MODES)}")


class DexBenchmark(Benchmark):
    kind = "dexbench"
    Options = DexOptions
    predictors = PREDICTORS

    def __init__(self, config: BenchmarkConfig) -> None:
        super().__init__(config)
        opts: DexOptions = self.options
        self.data_path = builtin_path() if opts.data == "builtin" else self.path(opts.data)
        try:
            instances = read_instances(self.data_path)
        except DataError as exc:
            raise self.fail("data", str(exc)) from exc
        kept: list[Instance] = []
        per_source: dict[str, int] = {}
        for instance in instances:
            if opts.sources is not None and instance.source not in opts.sources:
                continue
            seen = per_source.get(instance.source, 0)
            if opts.limit is None or seen < opts.limit:
                kept.append(instance)
                per_source[instance.source] = seen + 1
        if not kept:
            found = ", ".join(sorted({i.source for i in instances})) or "none"
            raise self.fail("sources", f"no instance left (sources in {self.data_path}: {found})")
        self.instances: dict[str, Instance] = {i.id: i for i in kept}
        self._hashes = {i.id: content_hash(asdict(i), 32) for i in kept}

    def chains(self) -> Iterator[ChainTemplate]:
        for instance_id in self.instances:
            for task in self.options.tasks:
                step = {"prompt_version": self.options.prompt_version}
                if task == BACKWARD:
                    step["backward_mode"] = self.options.backward_mode
                yield ChainTemplate(instance_id, self._hashes[instance_id], task, (step,))

    def _instance(self, call: PlannedCall) -> Instance:
        try:
            return self.instances[call.item_id]
        except KeyError:
            raise DataError(
                f"call {call.call_id}: instance {call.item_id!r} is not in {self.data_path}"
            ) from None

    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        instance = self._instance(call)
        if call.protocol == FORWARD:
            version = str(call.spec.get("prompt_version", prompts.PROMPT_VERSION))
            return prompts.forward_messages(instance.program, version)
        return prompts.backward_messages(
            instance.program,
            entry_point=instance.entry_point,
            target_line=instance.target_line,
            target_rule=instance.target_rule,
            current_input=instance.input,
            mode=str(call.spec["backward_mode"]),
        )

    def parse(self, call: PlannedCall, text: str) -> ParseResult:
        return parse_forward(text) if call.protocol == FORWARD else parse_backward(text)

    def verification(self, call: PlannedCall, answer: StepAnswer) -> VerificationJob | None:
        # Forward answers need no run: they are graded against the covered lines in the export.
        if call.protocol != BACKWARD or not isinstance(answer.parsed, dict):
            return None
        return verify.job(
            self._instance(call), str(answer.parsed["input"]), sandbox=self.options.sandbox
        )

    def verification_ready(self) -> str | None:
        if BACKWARD not in self.options.tasks:
            return None
        return Boundary(self.options.sandbox).require("DexBench backward verification")

    def data_sources(self) -> list[DataSource]:
        return [DataSource(str(self.data_path), file_sha256(self.data_path))]

    def offline_context(
        self, call: PlannedCall, earlier: Sequence[StepAnswer]
    ) -> Mapping[str, Any]:
        return context(self._instance(call), call.protocol)

    def export_fields(self, call: PlannedCall) -> Mapping[str, Any]:
        fields = oracle_fields(self._instance(call), call.protocol)
        if call.protocol == BACKWARD:
            fields["backward_mode"] = call.spec.get("backward_mode")
        return fields
