"""The `model` scorer: a grader model, bound as the benchmark's `grader` role, judges each
answer against its item's target with a versioned rubric.

Its verdict is a planned call of the same chain (the last step, after the subject's): resumed,
counted and exported like any other call. The grader's answer must end with `VERDICT:
CORRECT` (1), `PARTIAL` (0.5) or `INCORRECT` (0); anything else is the grader's parse_error.
The score is on the verdict's export row, which names the subject model it grades
(`graded_model`, from the chain's subject row) in the report.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

from evaltally.benchmarks.base import (
    SUBJECT,
    ChainTemplate,
    DataSource,
    ParseResult,
    Predictor,
    StepAnswer,
    file_sha256,
)
from evaltally.benchmarks.prompts import scorers
from evaltally.benchmarks.prompts.benchmark import PromptsBenchmark, PromptsOptions
from evaltally.config import BenchmarkConfig
from evaltally.errors import DataError
from evaltally.prompts import prompts as texts
from evaltally.records import Message, PlannedCall, content_hash

GRADER = "grader"
MAX_RUBRIC_BYTES = 1 << 20


def parse_verdict(text: str) -> ParseResult:
    """The last `VERDICT: ...` line of a grader's answer, as a score."""
    value = scorers.verdict_value(text)
    if value is None:
        return ParseResult(ok=False, error="no 'VERDICT: CORRECT|PARTIAL|INCORRECT' line")
    return ParseResult(ok=True, value=value, path="verdict")


def _grade_offline(context: Mapping[str, Any]) -> str:
    """`grader-exact`: a grader that says CORRECT exactly when the answer's normalised text
    contains a target (for offline demos and tests of the model scorer's plumbing)."""
    item = {"id": "", "target": context["item"]["target"]}
    hit = scorers.score({"name": "includes", "options": {}}, item, context["answer"] or "")
    return f"Compared with the reference.\nVERDICT: {'CORRECT' if hit else 'INCORRECT'}"


class ModelGradedPrompts(PromptsBenchmark):
    roles = (SUBJECT, GRADER)
    predictors: ClassVar[Mapping[str, Predictor]] = {
        **PromptsBenchmark.predictors,
        "grader-exact": _grade_offline,
    }

    def _scorer(self, opts: PromptsOptions) -> scorers.ScorerSpec:
        self.rubric = texts.RUBRIC
        self.rubric_path = None
        if opts.rubric is not None:
            self.rubric_path = self.path(opts.rubric)
            try:
                data = self.rubric_path.read_bytes()[:MAX_RUBRIC_BYTES]
                self.rubric = data.decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise self.fail("rubric", f"cannot read {self.rubric_path}: {exc}") from None
            if "{answer}" not in self.rubric:
                raise self.fail("rubric", "the rubric must contain the slot {answer}")
        version = opts.rubric_version or texts.RUBRIC_VERSION
        return scorers.ScorerSpec(
            "model", version, {"rubric_sha256": content_hash(self.rubric, 64)}
        )

    def _check_targets(self) -> None:
        missing = next((i for i, item in self.items.pairs() if "target" not in item), None)
        if missing is not None:
            raise DataError(
                f"{self.source} (item {missing!r}): the model scorer grades against a "
                "'target'; every item needs one"
            )

    def chains(self) -> Iterator[ChainTemplate]:
        assert self.scorer is not None
        for template in super().chains():
            n = len(template.steps)
            yield ChainTemplate(
                item_id=template.item_id,
                item_hash=template.item_hash,
                protocol="",
                steps=(*template.steps, {"rubric": self.scorer.version}),
                roles=(*(SUBJECT,) * n, GRADER),
            )

    def _subject_steps(self, item_id: str) -> int:
        item = self.items[item_id]
        return len(item["turns"]) if "turns" in item else 1

    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        if call.role != GRADER:
            return super().render(call, earlier)
        answer = earlier[call.step - 1].raw_text if call.step else None
        return texts.grader_messages(self.items[call.item_id], answer, self.rubric)

    def shown_answers(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> dict[int, str]:
        if call.role != GRADER:
            return super().shown_answers(call, earlier)
        last = earlier[call.step - 1] if call.step else None
        return {last.step: last.raw_text} if last is not None and last.raw_text else {}

    def parse(self, call: PlannedCall, text: str) -> ParseResult:
        return parse_verdict(text) if call.role == GRADER else super().parse(call, text)

    def _scored(self, call: PlannedCall) -> bool:
        return call.role == GRADER

    def offline_context(
        self, call: PlannedCall, earlier: Sequence[StepAnswer]
    ) -> Mapping[str, Any]:
        item = self.items[call.item_id]
        if call.role != GRADER:
            return {"item": item, "scorer": None}
        return {"item": item, "answer": earlier[call.step - 1].raw_text if call.step else None}

    def export_fields(self, call: PlannedCall) -> Mapping[str, Any]:
        if call.role != GRADER:
            return {}
        return {**super().export_fields(call), "graded_step": call.step - 1}

    def answer_fields(self, call: PlannedCall, row: Mapping[str, Any]) -> Mapping[str, Any]:
        if call.role != GRADER:
            return {}
        return {"score": scorers.verdict_score(row)}

    def data_sources(self) -> list[DataSource]:
        sources = super().data_sources()
        if self.rubric_path is not None:
            sources.append(DataSource(str(self.rubric_path), file_sha256(self.rubric_path)))
        return sources


def benchmark_for(config: BenchmarkConfig) -> type[PromptsBenchmark]:
    """The `prompts` kind's variant: a config scored by a model runs `ModelGradedPrompts`."""
    return ModelGradedPrompts if config.options.get("scorer") == "model" else PromptsBenchmark
