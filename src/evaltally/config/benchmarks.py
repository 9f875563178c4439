"""The `[[benchmarks]]` entries of a sweep config -> BenchmarkConfig: the kind's name, its label,
the roles bound to model keys, and the kind's own keys as written. What depends on the kind
(is it known, its roles, its typed `Options`, its offline predictors) is checked where the
benchmarks are bound (benchmarks/binding.py): config is data and never imports a benchmark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evaltally.config.records import BenchmarkConfig, ModelConfig
from evaltally.config.section import Section
from evaltally.errors import ConfigError

ON_FAILED_STEP = ("block", "continue")


def read_benchmarks(
    path: Path, items: list[Any], base: Path, models: tuple[ModelConfig, ...]
) -> tuple[BenchmarkConfig, ...]:
    if not items:
        raise ConfigError(path, "benchmarks", "needs at least one [[benchmarks]] entry")
    out: list[BenchmarkConfig] = []
    for i, item in enumerate(items):
        sec = Section(path, f"benchmarks[{i}]", item)
        kind = sec.require("kind", str)
        label = sec.get("name", str, kind)
        if label in {b.label for b in out}:
            raise ConfigError(path, sec.key("name"), f"duplicate benchmark name {label!r}")
        options = {
            k: v
            for k, v in sec.data.items()
            if k not in {"kind", "name", "samples", "roles", "on_failed_step"}
        }
        on_failed = sec.get("on_failed_step", str, None)
        if on_failed not in (None, *ON_FAILED_STEP):
            raise ConfigError(
                path, sec.key("on_failed_step"), f"must be one of: {', '.join(ON_FAILED_STEP)}"
            )
        roles = Section(path, sec.key("roles"), sec.get("roles", dict, {}))
        out.append(
            BenchmarkConfig(
                kind=kind,
                label=label,
                samples=sec.positive("samples", int, 1),
                options=options,
                base_dir=base,
                source=path,
                index=i,
                roles=_read_roles(roles.data, models, _fail(path, roles.where)),
                on_failed_step=on_failed,
            )
        )
    return tuple(out)


def _read_roles(
    data: Mapping[str, Any], models: Sequence[ModelConfig], fail: Callable[[str, str], ConfigError]
) -> dict[str, tuple[str, ...]]:
    """`[benchmarks.roles]`: each role a non-empty list of the config's model keys, none twice.
    Whether the benchmark has these roles is its binding's check."""
    keys = {m.key for m in models}
    out: dict[str, tuple[str, ...]] = {}
    for role, value in data.items():
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise fail(role, "must be a non-empty list of model keys")
        for key in value:
            if key not in keys:
                raise fail(role, f"unknown model {key!r}; models: {', '.join(sorted(keys))}")
        if len(set(value)) != len(value):
            raise fail(role, "lists a model twice")
        out[role] = tuple(value)
    return out


def _fail(path: Path, where: str) -> Callable[[str, str], ConfigError]:
    def fail(key: str, reason: str) -> ConfigError:
        return ConfigError(path, f"{where}.{key}" if key else where, reason)

    return fail
