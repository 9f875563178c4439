"""What changed between the config a run started with and the one it is continued with, named
key by key, so a refused plan says which key of which model or benchmark to restore (not only
how many recorded calls it would drop)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaltally.config.records import SweepConfig

MAX_LISTED = 8


def config_changes(before: SweepConfig, after: SweepConfig) -> list[str]:
    """`models[KEY].FIELD: OLD -> NEW` for every call-identity field of a model that changed,
    `benchmarks[LABEL].KEY: ...` for a benchmark's, and the entries removed. Additions are not
    listed: they only extend a plan."""
    changes: list[str] = []
    now = {m.key: m.identity() for m in after.models}
    for model in before.models:
        if model.key not in now:
            changes.append(f"models[{model.key}] removed")
            continue
        changes += _diff(f"models[{model.key}]", model.identity(), now[model.key])
    later = {b.label: b for b in after.benchmarks}
    for bench in before.benchmarks:
        if bench.label not in later:
            changes.append(f"benchmarks[{bench.label}] removed")
            continue
        changes += _diff(f"benchmarks[{bench.label}]", _bench(bench), _bench(later[bench.label]))
    return changes


def describe_changes(changes: list[str]) -> str:
    """The changes as one sentence's tail, at most MAX_LISTED of them."""
    shown = "; ".join(changes[:MAX_LISTED])
    more = len(changes) - MAX_LISTED
    return shown + (f"; and {more} more" if more > 0 else "")


def _bench(bench: Any) -> dict[str, Any]:
    return {
        "kind": bench.kind,
        "samples": bench.samples,
        **dict(bench.options),
        "roles": {k: list(v) for k, v in bench.roles.items()},
    }


def _diff(where: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out = []
    for name in sorted(set(old) | set(new)):
        if old.get(name) != new.get(name):
            out.append(f"{where}.{name}: {_show(old.get(name))} -> {_show(new.get(name))}")
    return out


def _show(value: Any) -> str:
    text = "(unset)" if value is None else repr(value)
    return text if len(text) <= 80 else text[:79] + "…"
