"""The `[[benchmarks]]` entries of a sweep config -> BenchmarkConfig: the kind, its label, the
roles bound to model keys, and the kind's own keys, checked by the kind's typed `Options` before
any data is read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaltally.config.records import BenchmarkConfig, ModelConfig
from evaltally.config.section import Section
from evaltally.errors import ConfigError

ON_FAILED_STEP = ("block", "continue")


def read_benchmarks(
    path: Path, items: list[Any], base: Path, models: tuple[ModelConfig, ...]
) -> tuple[BenchmarkConfig, ...]:
    # The registry imports config (benchmarks receive a BenchmarkConfig), so it is imported here.
    from evaltally.benchmarks.binding import check_baselines, read_roles
    from evaltally.benchmarks.registry import get_kind, kind_names

    if not items:
        raise ConfigError(path, "benchmarks", "needs at least one [[benchmarks]] entry")
    out: list[BenchmarkConfig] = []
    for i, item in enumerate(items):
        sec = Section(path, f"benchmarks[{i}]", item)
        kind = sec.require("kind", str)
        if kind not in kind_names():
            raise ConfigError(
                path, sec.key("kind"), f"unknown benchmark {kind!r}; known: {kind_names()}"
            )
        label = sec.get("name", str, kind)
        if label in {b.label for b in out}:
            raise ConfigError(path, sec.key("name"), f"duplicate benchmark name {label!r}")
        cls = get_kind(kind).benchmark_class()
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
        bconf = BenchmarkConfig(
            kind=kind,
            label=label,
            samples=sec.positive("samples", int, 1),
            options=options,
            base_dir=base,
            source=path,
            index=i,
            roles=read_roles(roles.data, cls.roles, models, _fail(path, roles.where)),
            on_failed_step=on_failed,
        )
        cls.Options.from_config(bconf)  # typed options: a bad key fails here, before any data
        out.append(bconf)
    check_baselines(path, models, out)
    return tuple(out)


def _fail(path: Path, where: str) -> Callable[[str, str], ConfigError]:
    def fail(key: str, reason: str) -> ConfigError:
        return ConfigError(path, f"{where}.{key}" if key else where, reason)

    return fail
