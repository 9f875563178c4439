"""CTXGAP as a runnable benchmark: one observer -> judge chain per planned (probe, view).

Step 0 (role `observer`) asks the probe's question over that view's text alone; step 1 (role
`judge`) scores the observer's recorded answer against the reference (prompts/ctxgap.py). The
chain's `item_id` is the probe id and its `protocol` the view's name, so `tally plan` counts
calls and tokens per view; the judge's planned call carries the view too, but its prompt is
rendered from the question, the reference and the answer only (chain.py), so the judge model
never learns which view produced the answer.

Options (docs/ctxgap.md, "Running it"): `data` (a data directory or "example"), `views` (the
views run, in report order; default every view of the data), `gap` (the two views whose gap is
reported; default the first two run), `variants` (report variants compared on common probes).
"""

from __future__ import annotations

import dataclasses
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
    StepAnswer,
    file_sha256,
)
from evaltally.config import BenchmarkConfig
from evaltally.errors import ConfigError, DataError
from evaltally.prompts.ctxgap import JUDGE_PROMPT_VERSION
from evaltally.records import Message, PlannedCall, content_hash

from .baselines import JUDGE, OBSERVER, OFFLINE_PREDICTORS
from .chain import judge_messages, observer_messages, observer_version
from .data import EXAMPLE, Dataset, InvalidProbe, Probe, View, load_dataset, resolve
from .parse import parse_observer, parse_verdict

ROLES = (OBSERVER, JUDGE)


@dataclass(frozen=True)
class CtxgapOptions(BenchmarkOptions):
    data: str = EXAMPLE
    """A data directory (views.jsonl, probes.jsonl), relative to the config, or "example"."""
    views: tuple[str, ...] | None = None
    """The views observers are asked in, in report order; default every view of the data."""
    gap: tuple[str, ...] | None = None
    """[U, T]: the gap reported is A(T) - A(U); default the first two views run."""
    variants: tuple[str, ...] | None = None
    """Report variants compared pairwise on the probes valid in all of them."""

    def check(self) -> None:
        if not self.data:
            raise OptionError("data", 'must be a data directory or "example"')
        for key, names in (("views", self.views), ("gap", self.gap), ("variants", self.variants)):
            if names is not None and len(set(names)) != len(names):
                raise OptionError(key, "names a view twice")
        if self.gap is not None and len(self.gap) != 2:
            raise OptionError("gap", "must name exactly two views, [U, T]: the gap is A(T) - A(U)")
        if self.variants is not None and len(self.variants) < 2:
            raise OptionError("variants", "must name at least two views to compare")


class CtxgapBenchmark(Benchmark):
    kind = "ctxgap"
    roles = ROLES
    Options = CtxgapOptions
    predictors = OFFLINE_PREDICTORS

    def __init__(self, config: BenchmarkConfig) -> None:
        super().__init__(config)
        opts: CtxgapOptions = self.options
        source = opts.data if opts.data == EXAMPLE else self.path(opts.data)
        try:
            self.dataset: Dataset = load_dataset(source)
        except DataError as exc:
            raise ConfigError(config.source, f"benchmarks[{config.index}].data", str(exc)) from exc
        self.directory = resolve(source)
        self.views = self._views(opts)
        self.gap: tuple[str, ...] | None = opts.gap or (self.views[:2] if self.views[1:] else None)
        for key, names in (("gap", opts.gap), ("variants", opts.variants)):
            for name in names or ():
                if name not in self.views:
                    raise self.fail(key, f"view {name!r} is not run (views: {self._listed()})")
        self.variants = tuple(opts.variants) if opts.variants else None
        self.probes = {p.probe_id: p for p in self.dataset.probes}
        self.probe_index = {p.probe_id: i for i, p in enumerate(self.dataset.probes)}
        self.planned = [(p, v) for p, v in self.dataset.planned() if v.name in self.views]
        if not self.planned:
            raise self.fail("views", "no valid probe is asked in these views")
        self._first = self.planned[0]

    def _views(self, opts: CtxgapOptions) -> tuple[str, ...]:
        available = self.dataset.view_names
        if opts.views is None:
            return available
        for name in opts.views:
            if name not in available:
                raise self.fail(
                    "views", f"no view {name!r} in {self.directory} (views: {', '.join(available)})"
                )
        return opts.views

    def _listed(self) -> str:
        return ", ".join(self.views)

    # -- plan ------------------------------------------------------------------------------

    def chains(self) -> Iterator[ChainTemplate]:
        judge = {"prompt_version": JUDGE_PROMPT_VERSION}
        for probe, view in self.planned:
            yield ChainTemplate(
                item_id=probe.probe_id,
                item_hash=_unit_hash(probe, view),
                protocol=view.name,
                steps=({"prompt_version": observer_version(view)}, judge),
                roles=ROLES,
            )

    # -- render and parse ------------------------------------------------------------------

    def _unit(self, call: PlannedCall) -> tuple[Probe, View]:
        probe = self.probes.get(call.item_id)
        view = None
        if probe is not None:
            view = self.dataset.views[(probe.task_id, probe.checkpoint)].get(call.protocol)
        if probe is None or view is None:
            raise DataError(
                f"call {call.call_id}: probe {call.item_id!r} in view {call.protocol!r} is not "
                f"in {self.directory}"
            )
        return probe, view

    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        probe, view = self._unit(call)
        if call.role == OBSERVER:
            return observer_messages(probe, view)
        return judge_messages(probe, _observer_answer(call, earlier))

    def parse(self, call: PlannedCall, text: str) -> ParseResult:
        return parse_observer(text) if call.role == OBSERVER else parse_verdict(text)

    def data_sources(self) -> list[DataSource]:
        return [DataSource(str(path), file_sha256(path)) for path in self.dataset.files]

    # -- oracle side -----------------------------------------------------------------------

    def offline_context(
        self, call: PlannedCall, earlier: Sequence[StepAnswer]
    ) -> Mapping[str, Any]:
        probe, view = self._unit(call)
        context: dict[str, Any] = {
            "role": call.role,
            "question": probe.question,
            "reference": probe.reference,
        }
        if call.role == OBSERVER:
            context["view_text"] = view.text
        else:
            context["answer"] = _observer_answer(call, earlier)
        return context

    def export_fields(self, call: PlannedCall) -> Mapping[str, Any]:
        probe, view = self._unit(call)
        first = (probe.probe_id, view.name) == (self._first[0].probe_id, self._first[1].name)
        return {
            "probe_id": probe.probe_id,
            "task_id": probe.task_id,
            "checkpoint": probe.checkpoint,
            "category": probe.category,
            "view": view.name,
            "importance": probe.importance,
            "atom_id": probe.atom_id,
            "probe_index": self.probe_index[probe.probe_id],
            "analysis": {
                "views": list(self.views),
                "gap": list(self.gap) if self.gap else None,
                "variants": list(self.variants) if self.variants else None,
            },
            # The benchmark's list, once per binding (on its first observer step): a row per
            # planned call cannot carry the probes that were never planned.
            "invalid_probes": (
                [dataclasses.asdict(i) for i in self.invalid()]
                if first and call.role == OBSERVER
                else None
            ),
        }

    def invalid(self) -> list[InvalidProbe]:
        """The data's invalid probes that concern the views run."""
        return [i for i in self.dataset.invalid() if i.view is None or i.view in self.views]


def _unit_hash(probe: Probe, view: View) -> str:
    """Everything a (probe, view) chain renders from or is graded with: a changed question,
    reference, importance or view text gives new call ids instead of reusing old answers."""
    return content_hash(
        {
            "probe": [
                probe.probe_id,
                probe.task_id,
                probe.checkpoint,
                probe.category,
                probe.question,
                probe.reference,
                probe.importance,
                probe.atom_id,
            ],
            "view": [view.task_id, view.checkpoint, view.name, view.text],
            # an actor view's messages are its content (text alone would not tell roles apart)
            **({"messages": list(view.messages)} if view.messages is not None else {}),
        },
        32,
    )


def _observer_answer(call: PlannedCall, earlier: Sequence[StepAnswer]) -> str:
    """The observer's recorded answer, as the judge is shown it."""
    if not earlier:
        raise ValueError(f"call {call.call_id}: the judge step needs the observer's answer")
    return (earlier[0].raw_text or "").strip()
