"""The benchmarks' binding step: a sweep config (plain data, config/) bound to the benchmark
kinds it names. Here, and only here, the kind is looked up, `[benchmarks.roles]` checked
against its roles, its keys checked by its typed `Options`, and `provider = "baseline"` models
against its offline predictors; then the benchmarks are built. Also the role bindings the
planner expands (one chain per combination of role models x item x sample)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path

from evaltally.benchmarks.base import Benchmark
from evaltally.benchmarks.registry import benchmark_class, kind_names, load_benchmark
from evaltally.config import BenchmarkConfig, ModelConfig, SweepConfig
from evaltally.config import load_config as load_data
from evaltally.errors import ConfigError

Binding = tuple[tuple[str, ModelConfig], ...]
"""(role, model) for each of a benchmark's roles, in the benchmark's role order."""


def check_roles(config: BenchmarkConfig, roles: Sequence[str]) -> None:
    """`[benchmarks.roles]` against the benchmark's roles (config/benchmarks.py checked the
    model keys): without the table every model answers a single-role benchmark; a benchmark
    with several roles needs a model list for each."""
    where = f"benchmarks[{config.index}].roles"

    def fail(key: str, reason: str) -> ConfigError:
        return ConfigError(config.source, f"{where}.{key}" if key else where, reason)

    if not config.roles:
        if len(roles) > 1:
            raise fail(
                "",
                f"is required: this benchmark's steps are answered by roles {', '.join(roles)}; "
                "bind models to each, e.g. [benchmarks.roles] "
                + " ".join(f'{r} = ["model-key"]' for r in roles),
            )
        return
    for role in config.roles:
        if role not in roles:
            raise fail(role, f"unknown role; this benchmark's roles: {', '.join(roles)}")
    missing = [r for r in roles if r not in config.roles]
    if missing:
        raise fail("", f"binds no model to role(s) {', '.join(missing)}")


def role_models(
    config: BenchmarkConfig, roles: Sequence[str], models: Sequence[ModelConfig]
) -> dict[str, list[ModelConfig]]:
    """Role -> the models bound to it, in config order."""
    if not config.roles:
        return {roles[0]: list(models)}
    by_key = {m.key: m for m in models}
    return {role: [by_key[k] for k in config.roles[role]] for role in roles}


def bindings_led_by(
    model: ModelConfig,
    config: BenchmarkConfig,
    roles: Sequence[str],
    models: Sequence[ModelConfig],
) -> Iterator[Binding]:
    """The role bindings whose first role is answered by `model`: planning model by model
    keeps a single-role sweep in the order it always had."""
    bound = role_models(config, roles, models)
    first, rest = roles[0], roles[1:]
    if all(m.key != model.key for m in bound[first]):
        return
    for others in itertools.product(*(bound[r] for r in rest)):
        yield ((first, model), *zip(rest, others, strict=True))


def bound_to(model: ModelConfig, config: BenchmarkConfig) -> bool:
    return not config.roles or any(model.key in keys for keys in config.roles.values())


def check_baselines(
    path: Path, models: Sequence[ModelConfig], benchmarks: Sequence[BenchmarkConfig]
) -> None:
    """A `provider = "baseline"` model must be a predictor of every benchmark it is bound to:
    refused here, at `tally plan`, rather than failing each call of the run."""
    for i, model in enumerate(models):
        if model.provider != "baseline":
            continue
        for bench in benchmarks:
            if not bound_to(model, bench):
                continue
            offered = sorted(benchmark_class(bench).predictors)
            if model.model not in offered:
                can = f"offers {', '.join(offered)}" if offered else "has no offline predictors"
                raise ConfigError(
                    path,
                    f"models[{i}].model",
                    f"baseline {model.model!r} cannot answer benchmark {bench.label!r} (kind "
                    f"{bench.kind!r} {can}); bind this model only to benchmarks it predicts, "
                    "with [benchmarks.roles]",
                )


def bind_benchmarks(config: SweepConfig) -> None:
    """Every kind-dependent check of the config's `[[benchmarks]]`, before any data is read."""
    for bench in config.benchmarks:
        if bench.kind not in kind_names():
            raise ConfigError(
                bench.source,
                f"benchmarks[{bench.index}].kind",
                f"unknown benchmark {bench.kind!r}; known: {kind_names()}",
            )
        cls = benchmark_class(bench)
        check_roles(bench, cls.roles)
        cls.Options.from_config(bench)  # typed options: a bad key fails here, before any data
    check_baselines(config.path, config.models, config.benchmarks)


def load_benchmarks(config: SweepConfig) -> dict[str, Benchmark]:
    """The config's benchmarks, bound and built (each reads its data), by label."""
    bind_benchmarks(config)
    return {b.label: load_benchmark(b) for b in config.benchmarks}


def load_config(
    path: Path, *, base_dir: Path | None = None, text: str | None = None
) -> SweepConfig:
    """A sweep config read (config.load_config) and bound to its benchmark kinds: every error
    a config can hold, before anything runs (`evaltally.load_config`)."""
    config = load_data(path, base_dir=base_dir, text=text)
    bind_benchmarks(config)
    return config
