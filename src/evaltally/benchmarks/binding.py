"""Which models answer which steps: `[benchmarks.roles]` read and checked, and the role
bindings the planner expands (one chain per combination of role models x item x sample)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from evaltally.config import BenchmarkConfig, ModelConfig
from evaltally.errors import ConfigError

Fail = Callable[[str, str], ConfigError]
Binding = tuple[tuple[str, ModelConfig], ...]
"""(role, model) for each of a benchmark's roles, in the benchmark's role order."""


def read_roles(
    data: Mapping[str, Any], roles: Sequence[str], models: Sequence[ModelConfig], fail: Fail
) -> dict[str, tuple[str, ...]]:
    """Validate `[benchmarks.roles]` against the benchmark's roles and the config's models.

    Without the table every model answers a single-role benchmark; a benchmark with several
    roles needs a model list for each."""
    if not data:
        if len(roles) > 1:
            raise fail(
                "",
                f"is required: this benchmark's steps are answered by roles {', '.join(roles)}; "
                "bind models to each, e.g. [benchmarks.roles] "
                + " ".join(f'{r} = ["model-key"]' for r in roles),
            )
        return {}
    keys = {m.key for m in models}
    out: dict[str, tuple[str, ...]] = {}
    for role, value in data.items():
        if role not in roles:
            raise fail(role, f"unknown role; this benchmark's roles: {', '.join(roles)}")
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise fail(role, "must be a non-empty list of model keys")
        for key in value:
            if key not in keys:
                raise fail(role, f"unknown model {key!r}; models: {', '.join(sorted(keys))}")
        if len(set(value)) != len(value):
            raise fail(role, "lists a model twice")
        out[role] = tuple(value)
    missing = [r for r in roles if r not in out]
    if missing:
        raise fail("", f"binds no model to role(s) {', '.join(missing)}")
    return {r: out[r] for r in roles}


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
    from evaltally.benchmarks.registry import get_kind

    for i, model in enumerate(models):
        if model.provider != "baseline":
            continue
        for bench in benchmarks:
            if not bound_to(model, bench):
                continue
            offered = sorted(get_kind(bench.kind).benchmark_class().predictors)
            if model.model not in offered:
                can = f"offers {', '.join(offered)}" if offered else "has no offline predictors"
                raise ConfigError(
                    path,
                    f"models[{i}].model",
                    f"baseline {model.model!r} cannot answer benchmark {bench.label!r} (kind "
                    f"{bench.kind!r} {can}); bind this model only to benchmarks it predicts, "
                    "with [benchmarks.roles]",
                )
