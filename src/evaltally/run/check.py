"""`tally check CONFIG`: one smallest call per model before a sweep, so a wrong key, a mistyped
model id or a refused reasoning switch shows up before thousands of calls are planned.

Each model gets one request built exactly as its run would build it (same adapter, endpoint,
reasoning switch and params), except that its output limit is cut to CHECK_MAX_TOKENS, and a
one-line prompt. With reasoning = "on" the configured limit is kept: providers check a thinking
budget against it (Anthropic refuses a budget_tokens >= max_tokens), so a cut limit would fail
where the run would not. Nothing is written: no run directory, no ledger.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace

from evaltally.adapters import prepare_attempt
from evaltally.adapters.prices import Price
from evaltally.config import ModelConfig, SweepConfig
from evaltally.config.keys import read_api_keys
from evaltally.errors import EvaltallyError
from evaltally.records import AttemptError, Completion, ErrorAction, RateLimitSnapshot
from evaltally.runner.lane import Lane
from evaltally.runner.transport import AiohttpTransport, Transport, TransportFailure
from evaltally.runner.units import build_unit

CHECK_PROMPT = "Reply with the word OK."
CHECK_MAX_TOKENS = 1
OUTPUT_LIMITS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
"""The params that bound a model's output; the check sets whichever the config uses."""


@dataclass(frozen=True, slots=True)
class ModelCheck:
    """What one model's check call showed. `ok` is False when the sweep's calls would fail."""

    model: str
    key: str
    """"accepted", "rejected", "not set", "none needed" or "unknown"."""
    found: str
    """"yes", "no" or "unknown"."""
    reasoning: str
    """"accepted", "refused", "not asked" (reasoning = "default") or "unknown"."""
    limits: str
    """The rate limits the response's headers advertise, or "-"."""
    price: Price | None
    cost_usd: float | None
    """The sweep's estimated cost for this model (plan estimate x price), None when unpriced."""
    ok: bool
    detail: str = ""


def check_params(model: ModelConfig) -> dict[str, object]:
    """The model's params with its output limit cut for the check (see the module doc)."""
    params = dict(model.params)
    if model.reasoning.mode == "on":
        return params
    for name in OUTPUT_LIMITS:
        if name in params:
            params[name] = CHECK_MAX_TOKENS
    return params


def advertised(snapshot: RateLimitSnapshot | None) -> str:
    """The limits a response's headers advertise, with their reset, as one short text."""
    if snapshot is None:
        return "-"
    parts = []
    for what, limit, reset in (
        ("requests", snapshot.limit_requests, snapshot.reset_requests_s),
        ("tokens", snapshot.limit_tokens, snapshot.reset_tokens_s),
    ):
        if limit is not None:
            parts.append(f"{limit:,} {what}" + (f" (resets in {reset:g}s)" if reset else ""))
    return "; ".join(parts) or "-"


async def check_models(
    config: SweepConfig,
    costs: Mapping[str, float | None],
    env: Mapping[str, str] | None = None,
    transport: Transport | None = None,
) -> list[ModelCheck]:
    """One check call per model of `config`, all at once; `costs` are the plan's estimates."""
    own = transport is None
    sender: Transport = AiohttpTransport() if transport is None else transport
    try:
        return list(
            await asyncio.gather(
                *(_check(m, config, costs.get(m.key), env, sender) for m in config.models)
            )
        )
    finally:
        if own:
            await sender.close()


Verdict = tuple[str, str, str, bool]
"""(key, found, reasoning, ok) of one check."""


async def _check(
    model: ModelConfig,
    config: SweepConfig,
    cost: float | None,
    env: Mapping[str, str] | None,
    transport: Transport,
) -> ModelCheck:
    def row(verdict: Verdict, detail: str = "", limits: str = "-") -> ModelCheck:
        key, found, reasoning, ok = verdict
        return ModelCheck(
            model.key,
            key,
            found,
            reasoning,
            limits,
            model.price,
            cost,
            ok,
            " ".join(detail.split()),
        )

    if model.provider == "baseline":
        return row(("none needed", "yes", "not asked", True), "offline predictor")
    try:
        keys = read_api_keys(replace(config, models=(model,)), env)
        unit = build_unit(model, keys.get(model.key), Lane(model.key, model.limits))
    except EvaltallyError as exc:
        return row(("not set", "unknown", "unknown", False), str(exc).splitlines()[-1])
    if unit.adapter is None or unit.endpoint is None:  # only a baseline has neither
        return row(("none needed", "yes", "not asked", True))
    endpoint = replace(unit.endpoint, params=check_params(model))
    request = unit.adapter.build_request(endpoint, [{"role": "user", "content": CHECK_PROMPT}])
    try:
        response = await transport.send(
            prepare_attempt(unit.adapter, request),
            model.limits.timeout_s,
            model.limits.max_response_bytes,
        )
    except TransportFailure as exc:
        return row(("unknown", "unknown", "unknown", False), f"{exc.error_class}: {exc.detail}")
    limits = advertised(unit.adapter.rate_limits(response))
    asked = "not asked" if model.reasoning.mode == "default" else "accepted"
    key = "accepted" if model.api_key_env else "none needed"
    answer = unit.adapter.parse_response(response)
    if isinstance(answer, Completion) or answer.error_class == "bad_body":
        # Any 2xx: the key, the model and the request's fields were accepted.
        return row((key, "yes", asked, True), "", limits)
    return row(_refused(answer, key, asked), answer.detail, limits)


def _refused(error: AttemptError, key: str, asked: str) -> Verdict:
    if error.stop_kind == "credentials":
        return ("rejected", "unknown", "unknown", False)
    if error.stop_kind == "model":
        return (key, "no", "unknown", False)
    if error.stop_kind == "quota":
        return (key, "yes", "unknown", False)
    if error.action is ErrorAction.RETRY:
        # Busy or rate-limited: nothing says the sweep's calls would fail.
        return (key, "unknown", "unknown", True)
    # A request refused as built: with a reasoning switch sent, the switch is the suspect.
    return (key, "yes", "refused" if asked == "accepted" else asked, False)
