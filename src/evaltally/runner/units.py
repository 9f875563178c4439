"""Models -> lane units: one lane per endpoint, one unit (adapter + endpoint) per model key.

Two config entries that reach the same endpoint (`ModelConfig.endpoint_identity`: provider,
model id, base URL, key variable, region), such as one model at two temperatures or a judge
used by two benchmarks, share one lane: one concurrency cap, one set of rate buckets, one
pause and one circuit breaker. Their lane takes the tightest of their limits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from evaltally.adapters.base import Endpoint
from evaltally.config import Limits, ModelConfig, SweepConfig
from evaltally.errors import CredentialError
from evaltally.runner import clock as clk
from evaltally.runner.call import LaneUnit
from evaltally.runner.lane import Lane


def build_unit(model: ModelConfig, api_key: str | None, lane: Lane) -> LaneUnit:
    if model.provider == "baseline":
        return LaneUnit(model=model, lane=lane, adapter=None, endpoint=None)
    from evaltally.adapters import http_adapter

    endpoint = Endpoint(
        model=model.model,
        base_url=model.base_url,
        api_key=api_key,
        params=model.params,
        reasoning=model.reasoning,
        api_version=model.api_version,
        region=model.region,
    )
    adapter = http_adapter(
        model.provider, key_env=model.api_key_env, inline_thinking=model.inline_thinking
    )
    # Building one request up front surfaces missing credentials (Bedrock's AWS variables,
    # region) for every model before anything is planned or sent.
    adapter.build_request(endpoint, [{"role": "user", "content": "credential check"}])
    return LaneUnit(model=model, lane=lane, adapter=adapter, endpoint=endpoint)


def shared_limits(limits: Sequence[Limits]) -> Limits:
    """The tightest of several entries' lane limits (None means unlimited). Per-call settings
    (timeout, attempts, backoff) stay each model's own."""

    def least(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return min(known) if known else None

    first = limits[0]
    return replace(
        first,
        concurrency=min(x.concurrency for x in limits),
        rpm=least([x.rpm for x in limits]),
        tpm=least([x.tpm for x in limits]),
        breaker_threshold=min(x.breaker_threshold for x in limits),
        breaker_cooldown_s=max(x.breaker_cooldown_s for x in limits),
    )


def build_units(
    config: SweepConfig,
    keys: Mapping[str, str],
    clock: clk.Clock = clk.monotonic,
    sleep: clk.Sleep = clk.sleep,
) -> dict[str, LaneUnit]:
    """Model key -> unit; every model's credential problem is reported together. The lanes
    read `clock` and wait with `sleep` (runner/clock.py)."""
    groups: dict[tuple[str, ...], list[ModelConfig]] = {}
    for m in config.models:
        groups.setdefault(m.endpoint_identity(), []).append(m)
    units: dict[str, LaneUnit] = {}
    problems: list[str] = []
    for models in groups.values():
        name = "+".join(m.key for m in models)
        lane = Lane(name, shared_limits([m.limits for m in models]), clock=clock, sleep=sleep)
        for m in models:
            try:
                units[m.key] = build_unit(m, keys.get(m.key), lane)
            except CredentialError as exc:
                problems.append(f"  model {m.key!r}: {exc}")
    if problems:
        raise CredentialError("credentials are missing:\n" + "\n".join(problems))
    return {m.key: units[m.key] for m in config.models}
