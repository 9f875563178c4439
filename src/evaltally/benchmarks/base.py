"""The benchmark contract: what the planner, runner, ledger and report need from a benchmark.

A benchmark kind is one folder, `benchmarks/<kind>/`, whose `__init__.py` defines `KIND`, a
`BenchmarkKind` naming (lazily, as "module:attribute") its `Benchmark` subclass, its grader
class (report/section.py) and its CLI sub-app; `benchmarks/registry.py` lists the folder in one
line; its prompt texts live in `prompts/<kind>.py`. docs/benchmarks.md walks through a kind.

A `Benchmark` subclass:

- declares `roles`, the roles its steps are answered by (default one role, `subject`); the
  config binds models to roles (`[benchmarks.roles]`), and the planner makes one chain per
  combination of role models x item x sample;
- declares `Options`, a frozen `BenchmarkOptions` dataclass of its config keys (typed and
  validated; unknown keys are refused naming the file and key);
- turns its items into `ChainTemplate`s (model-independent), each step naming its role;
- renders a planned call's messages from the item and the chain's recorded answers (pure: the
  same inputs give the same bytes, which is what lets a resume prove it sends the same request);
- parses an answer, knowing which call it answers (a judge step and an observer step of one
  chain get different parsers);
- may verify an `ok` answer off the event loop (`verification`), the verdict going to the
  ledger's `verifications` table;
- adds its oracle fields to export rows and lists `predictors`, the offline answerers that a
  `provider = "baseline"` model runs (reading only `offline_context(call, earlier)`, never
  the network);
- may build on another run's recorded answers (a fork of a recorded chain, judges of recorded
  traces): `parents()` names those runs (recorded in the ledger's meta) and
  `reused_requests()` lists recorded requests the session must re-build byte for byte before
  anything is sent.

Everything a benchmark raises while rendering, parsing or predicting fails that call (with the
reason in the ledger); it never stops the run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from evaltally.config import BenchmarkConfig, ModelConfig
from evaltally.errors import ConfigError
from evaltally.records import SUBJECT, JSONValue, Message, PlannedCall, Status

if TYPE_CHECKING:
    import typer

    from evaltally.report.section import Grader

__all__ = [
    "SUBJECT",
    "Benchmark",
    "BenchmarkKind",
    "BenchmarkOptions",
    "ChainTemplate",
    "DataSource",
    "OptionError",
    "ParseResult",
    "Predictor",
    "ReusedRequest",
    "StepAnswer",
    "VerificationJob",
    "file_sha256",
]


@dataclass(frozen=True, slots=True)
class ChainTemplate:
    """One chain before it is bound to models and a sample."""

    item_id: str
    item_hash: str
    """Hash of the item's content: an edited item gets new call ids, so it is never mistaken
    for the item whose answers are recorded."""
    protocol: str
    steps: tuple[Mapping[str, JSONValue], ...]
    """Per step, the `spec` a planned call carries (what render needs beyond the item). The
    key `role` is reserved: the planner records the step's role there."""
    roles: tuple[str, ...] = ()
    """Per step, the role that answers it (one of the benchmark's `roles`); empty means every
    step is answered by the benchmark's first role."""

    def role(self, step: int, default: str) -> str:
        return self.roles[step] if self.roles else default


@dataclass(frozen=True, slots=True)
class StepAnswer:
    """A recorded answer of an earlier step in the same chain."""

    step: int
    status: Status
    raw_text: str | None
    parsed: Any


@dataclass(frozen=True, slots=True)
class ParseResult:
    ok: bool
    value: Any = None
    path: str | None = None
    """Which parser succeeded (e.g. "strict", "tolerant", "text"); None on failure."""
    error: str | None = None


@dataclass(frozen=True, slots=True)
class VerificationJob:
    """Work that checks one answer, run in a separate worker process (never on the event loop).

    `function` is "package.module:function"; the worker imports it and calls it with `args`
    (plain JSON data: the answer and whatever oracle data the check needs). It returns
    `{"verdict": "passed" | "failed", "detail": <JSON>}`. An exception, a dead worker or a
    timeout is recorded as verdict `error` with the reason; nothing is retried.
    """

    function: str
    args: JSONValue
    timeout_s: float = 60.0


@dataclass(frozen=True, slots=True)
class DataSource:
    """Where a benchmark's items came from, recorded in the ledger and shown in the report."""

    path: str
    sha256: str
    hashed: str | None = None
    """What `sha256` is the hash of when it is not the file's bytes (a parent run's ledger
    keeps growing, so a run built on it hashes what it took from it), as the report names it."""


@dataclass(frozen=True, slots=True)
class ReusedRequest:
    """A request another run recorded, which this benchmark's prompts continue (a fork's
    prefix). Before anything is sent, the session re-builds `messages` with `model`'s adapter
    and refuses the run when the body no longer hashes to `request_hash`."""

    model: ModelConfig
    messages: list[Message]
    request_hash: str
    where: str
    """The recorded call, as the error names it (run, chain, step, call id)."""


Predictor = Callable[[Mapping[str, Any]], str]
"""An offline answerer: `offline_context(call, earlier)` -> the answer text. Pure and fast."""


class OptionError(ValueError):
    """Raised by `BenchmarkOptions.check`: which key is wrong and why."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")


@dataclass(frozen=True)
class BenchmarkOptions:
    """Base of a benchmark's typed options: the keys of its `[[benchmarks]]` table besides
    `kind`, `name`, `samples` and `roles`.

    Subclasses are frozen dataclasses whose fields are the keys, typed `str`, `int`, `float`,
    `bool`, `tuple[str, ...]` or `X | None`; a field without a default is required. Values are
    checked against those types, unknown keys are refused, and `check()` adds the benchmark's
    own rules (raise `OptionError(key, reason)`). Every error names the file and key.
    """

    def check(self) -> None:
        """Cross-field and value rules beyond the types."""

    @classmethod
    def from_config(cls, config: BenchmarkConfig) -> Self:
        where = f"benchmarks[{config.index}]"

        def fail(key: str, reason: str) -> ConfigError:
            return ConfigError(config.source, f"{where}.{key}", reason)

        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(config.options) - set(fields))
        if unknown:
            valid = ", ".join(sorted(fields)) or "(none)"
            raise fail(unknown[0], f"unknown key; valid keys here: {valid}")
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for name, f in fields.items():
            if name in config.options:
                try:
                    values[name] = _typed(config.options[name], hints[name])
                except OptionError as exc:
                    raise fail(name, exc.reason) from None
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise fail(name, "is required")
        options = cls(**values)
        try:
            options.check()
        except OptionError as exc:
            raise fail(exc.key, exc.reason) from None
        return options


def _typed(value: Any, hint: Any) -> Any:
    """`value` checked against a field's type hint (the few shapes options use)."""
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        inner = [a for a in args if a is not type(None)]
        return _typed(value, inner[0])
    if typing.get_origin(hint) is tuple:
        if not isinstance(value, list) or not value:
            raise OptionError("", f"must be a non-empty list of {args[0].__name__}")
        return tuple(_typed(v, args[0]) for v in value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, hint) or (hint is not bool and isinstance(value, bool)):
        raise OptionError("", f"must be {hint.__name__}, got {type(value).__name__}")
    return value


class Benchmark(ABC):
    """Base class for benchmark kinds. Subclasses load their items in `__init__`."""

    kind: ClassVar[str]
    roles: ClassVar[tuple[str, ...]] = (SUBJECT,)
    """The roles whose models answer this benchmark's steps, in binding order."""
    Options: ClassVar[type[BenchmarkOptions]] = BenchmarkOptions
    predictors: ClassVar[Mapping[str, Predictor]] = {}
    """Offline answerers by name (`provider = "baseline"`, `model = <name>`)."""
    on_failed_step_default: ClassVar[str] = "block"
    """After a step of a chain failed (no usable answer after the retries): "block" leaves the
    rest of the chain unsent (blocked); "continue" renders later steps with that step as
    failed (the benchmark shows it as it likes) and carries on. The config's
    `on_failed_step` overrides it per benchmark."""

    def __init__(self, config: BenchmarkConfig) -> None:
        self.config = config
        self.label = config.label
        self.options: Any = self.Options.from_config(config)
        self.on_failed_step = config.on_failed_step or self.on_failed_step_default

    def fail(self, key: str, reason: str) -> ConfigError:
        """A config error about one of this benchmark's keys."""
        return ConfigError(self.config.source, f"benchmarks[{self.config.index}].{key}", reason)

    def path(self, value: str) -> Path:
        """A path option resolved against the config's directory."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.config.base_dir / path

    @abstractmethod
    def chains(self) -> Iterator[ChainTemplate]:
        """Every chain template, in a stable order."""

    @abstractmethod
    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        """The messages for `call`, given the answers of the chain's earlier steps."""

    @abstractmethod
    def parse(self, call: PlannedCall, text: str) -> ParseResult:
        """Interpret a model's raw answer to `call`. A failure is a model outcome
        (`parse_error`), never retried."""

    def estimate_messages(self, call: PlannedCall) -> list[Message]:
        """Messages used for token estimates before anything ran: earlier steps stand in as
        empty answers (text "", nothing parsed)."""
        return self.render(call, [StepAnswer(s, Status.OK, "", None) for s in range(call.step)])

    def offline_context(
        self, call: PlannedCall, earlier: Sequence[StepAnswer]
    ) -> Mapping[str, Any]:
        """What an offline predictor may read for this call (oracle inputs, never sent), given
        the answers of the chain's earlier steps (a judge step's predictor reads the answer it
        judges, as `render` does)."""
        return {}

    def export_fields(self, call: PlannedCall) -> Mapping[str, Any]:
        """Oracle fields a regrader needs beside each export row."""
        return {}

    def answer_fields(self, call: PlannedCall, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """Fields computed from the call's recorded answer, given its export row (a score);
        a pure function of the row and the benchmark's items, so a regrader recomputes them."""
        return {}

    def verification(self, call: PlannedCall, answer: StepAnswer) -> VerificationJob | None:
        """The check of an `ok` answer, or None when this call's answers are not verified."""
        return None

    def verification_ready(self) -> str | None:
        """Before anything is sent or verified: raise an `EvaltallyError` naming what
        `verification` needs and is missing (an OS sandbox, say); return a warning the user
        must see on every run (a weaker mode chosen explicitly), or None."""
        return None

    @property
    def verifies(self) -> bool:
        """Whether any answer of this benchmark may need verification (resume and regrade
        look for unverified answers only in benchmarks that say so)."""
        return type(self).verification is not Benchmark.verification

    def data_sources(self) -> list[DataSource]:
        """The files the items came from, with their SHA-256 (recorded at plan time)."""
        return []

    def shown_answers(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> dict[int, str]:
        """Where the chain's own earlier answers appear in this call's prompt: step -> the
        exact text of the rendered messages that carries that step's answer (`tally view`
        highlights it). Empty for a benchmark whose prompts never show earlier answers."""
        return {}

    def parents(self) -> list[dict[str, JSONValue]]:
        """The runs whose recorded answers this benchmark's items are built from (each a JSON
        object naming the run directory and what was taken from it); recorded in the ledger's
        meta under `parents`. Empty for a benchmark that reads only data files."""
        return []

    def reused_requests(self) -> Sequence[ReusedRequest]:
        """Requests of other runs that this benchmark's prompts continue byte for byte (see
        `ReusedRequest`); computed once per session, before anything is sent."""
        return ()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(import_module(module), attr)


@dataclass(frozen=True)
class BenchmarkKind:
    """One registry entry. References are "module:attribute" strings, imported on first use,
    so listing the kinds (config validation, `tally --help`) loads no benchmark's data code."""

    name: str
    title: str
    """Shown as the report section's heading (e.g. "CTE-Bench")."""
    benchmark: str
    """The `Benchmark` subclass."""
    grader: str
    """A `report.section.Grader` class: fed this kind's export rows, it returns the report
    section (every metric from the rows alone)."""
    cli: str | None = None
    """A typer app mounted as `tally <mount_name> ...`."""
    cli_help: str = ""
    resamples: int = 2000
    """Bootstrap resamples of this kind's intervals when `tally report`/`grade` name none."""
    command: str | None = None
    """A typer command function mounted as `tally <name>` itself (a kind whose CLI is one
    command, such as `tally fork RUN ...`); a kind has `cli` or `command`, not both."""
    cli_name: str | None = None
    """The sub-command's name when it is not the kind's name (DexBench: `tally dex ...`)."""
    variant: str | None = None
    """A function (config -> `Benchmark` subclass) choosing the class that runs one config, for
    a kind whose roles depend on an option (a `prompts` benchmark graded by a model adds a
    `grader` role); without it every config runs `benchmark`. It lives beside both classes, so
    the base class never names its subclasses."""

    @property
    def mount_name(self) -> str:
        """What `tally <mount_name> ...` mounts this kind's CLI as."""
        return self.cli_name or self.name

    def benchmark_class(self) -> type[Benchmark]:
        return _benchmark_subclass(_load(self.benchmark), self.benchmark)

    def class_for(self, config: BenchmarkConfig) -> type[Benchmark]:
        """The class that runs CONFIG: the kind's own, or the one its `variant` chooses."""
        if self.variant is None:
            return self.benchmark_class()
        return _benchmark_subclass(_load(self.variant)(config), self.variant)

    def grader_class(self) -> type[Grader]:
        cls: type[Grader] = _load(self.grader)
        return cls

    def load_cli(self) -> typer.Typer | None:
        app: typer.Typer | None = _load(self.cli) if self.cli else None
        return app

    def load_command(self) -> Callable[..., Any] | None:
        command: Callable[..., Any] | None = _load(self.command) if self.command else None
        return command


def _benchmark_subclass(cls: Any, ref: str) -> type[Benchmark]:
    if not (isinstance(cls, type) and issubclass(cls, Benchmark)):
        raise TypeError(f"{ref} gave {cls!r}, not a Benchmark subclass")
    return cls
