"""Sweep config (TOML) -> validated, frozen objects.

Every error names the file, the key (dotted, with list indices) and the reason. Unknown keys
are errors, so a typo never silently falls back to a default. The key names are the contract
in DESIGN.md's "Config shape"; `docs/config.md` describes each one.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaltally import redact
from evaltally.config_checks import check_base_url, check_key_env, check_run_name
from evaltally.errors import ConfigError, CredentialError

ON_FAILED_STEP = ("block", "continue")
REASONING_CHOICES = ("off", "on", "default")
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""Far above any completion (a 128K-token answer is under 1 MB of JSON), far below trouble."""
# Batch mode (docs/batch.md): model keys and their choices.
MODES = ("sync", "batch")
BATCH_FALLBACKS = ("none", "sync")
BATCH_MODEL_KEYS = ("mode", "batch_fallback", "batch")


@dataclass(frozen=True)
class Limits:
    """One lane: what the endpoint allows and how patient we are with it."""

    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    timeout_s: float = 120.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_attempts: int = 6
    breaker_threshold: int = 8
    breaker_cooldown_s: float = 20.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def usd(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


@dataclass(frozen=True)
class BatchSettings:
    """How a model in batch mode submits its calls (docs/batch.md)."""

    kind: str
    """The batch API shape: openai, anthropic or gemini."""
    max_requests: int
    max_bytes: int
    discount: float | None
    """Batch price / list price; None: no documented discount, the list price is used."""
    list_price: Price | None
    """What a call costs when it falls back to the synchronous API."""
    fallback: str = "none"
    poll_s: float = 30.0


@dataclass(frozen=True)
class ModelConfig:
    key: str
    provider: str
    model: str
    base_url: str
    api_key_env: str | None
    params: Mapping[str, Any]
    limits: Limits
    reasoning: str = "default"
    price: Price | None = None
    """The price of one call in this model's mode (the batch price in batch mode)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    reasoning_effort: str | None = None
    """With reasoning = "on": the effort to ask for where the provider takes one."""
    reasoning_budget: int | None = None
    """With reasoning = "on": the thinking budget in tokens where the provider takes one."""
    api_version: str | None = None
    """The API version an Anthropic or Gemini endpoint is addressed with (default: the
    adapter's)."""
    mode: str = "sync"
    batch: BatchSettings | None = None

    def identity(self) -> dict[str, Any]:
        """What a recorded answer depends on. Limits, base URL, API version and mode are
        excluded on purpose: changing pace, pointing at a proxy or switching between the
        synchronous and the batch API sends the same request bodies and must not invalidate
        answers already paid for. The reasoning effort and budget enter only when set, so
        configs without them keep the ids they always had."""
        identity: dict[str, Any] = {
            "key": self.key,
            "provider": self.provider,
            "model": self.model,
            "params": dict(self.params),
            "reasoning": self.reasoning,
        }
        if self.reasoning_effort is not None:
            identity["reasoning_effort"] = self.reasoning_effort
        if self.reasoning_budget is not None:
            identity["reasoning_budget"] = self.reasoning_budget
        return identity

    @property
    def max_output_tokens(self) -> int:
        """The output-token cap the params set, whatever the provider calls it (OpenAI's
        reasoning models take only `max_completion_tokens`); 0 when none is set."""
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            if self.params.get(key):
                return int(self.params[key])
        return 0

    def endpoint_identity(self) -> tuple[str, ...]:
        """Which endpoint the model reaches: config entries with the same identity (say, one
        model at two temperatures) share one lane and so one set of limits."""
        region = str(self.extra.get("region", ""))
        return (self.provider, self.model, self.base_url, self.api_key_env or "", region)


@dataclass(frozen=True)
class BenchmarkConfig:
    kind: str
    label: str
    samples: int
    options: Mapping[str, Any]
    """The kind's own keys, as written; the benchmark reads them as typed `Options`."""
    base_dir: Path
    source: Path
    index: int
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """`[benchmarks.roles]`: role -> model keys. Empty: every model is the only role."""
    on_failed_step: str | None = None
    """"block" or "continue" (what later steps of a chain do after a step failed); None: the
    benchmark's default."""


@dataclass(frozen=True)
class SweepConfig:
    path: Path
    name: str
    runs_dir: Path
    models: tuple[ModelConfig, ...]
    benchmarks: tuple[BenchmarkConfig, ...]
    budget_usd: float | None = None
    text: str = ""

    @property
    def run_dir(self) -> Path:
        return self.runs_dir / self.name


class _Section:
    """Typed access to one TOML table that remembers which keys were read."""

    def __init__(self, path: Path, where: str, data: object) -> None:
        if not isinstance(data, dict):
            raise ConfigError(path, where, f"must be a table, got {type(data).__name__}")
        self.path, self.where, self.data = path, where, data

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def get(self, name: str, types: type | tuple[type, ...], default: Any = None) -> Any:
        if name not in self.data:
            return default
        value = self.data[name]
        # bool is an int in Python; a config that says `concurrency = true` is a mistake.
        bad_bool = isinstance(value, bool) and bool not in _as_tuple(types)
        if bad_bool or not isinstance(value, types):
            want = " or ".join(t.__name__ for t in _as_tuple(types))
            raise ConfigError(
                self.path, self.key(name), f"must be {want}, got {type(value).__name__}"
            )
        return value

    def require(self, name: str, types: type | tuple[type, ...]) -> Any:
        if name not in self.data:
            raise ConfigError(self.path, self.key(name), "is required")
        return self.get(name, types)

    def number(self, name: str, types: type | tuple[type, ...], default: Any) -> Any:
        """A number that is finite: TOML's inf and nan are never a sensible setting."""
        value = self.get(name, types, default)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(self.path, self.key(name), f"must be a finite number, got {value}")
        return value

    def positive(self, name: str, types: type | tuple[type, ...], default: Any) -> Any:
        value = self.number(name, types, default)
        if value is not None and value <= 0:
            raise ConfigError(self.path, self.key(name), f"must be > 0, got {value}")
        return value

    def only(self, allowed: set[str]) -> None:
        unknown = sorted(set(self.data) - allowed)
        if unknown:
            raise ConfigError(
                self.path,
                self.key(unknown[0]),
                f"unknown key; valid keys here: {', '.join(sorted(allowed))}",
            )


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


NUMBER = (int, float)


def check_budget(value: object, source: Path | str, key: str) -> float | None:
    """The one rule for a spend limit, whether from `run.budget_usd` or `--budget`: a finite
    number of USD >= 0, where 0 means nothing may be spent. None: no limit."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(source, key, f"must be a number (USD), got {type(value).__name__}")
    if not math.isfinite(value) or value < 0:
        raise ConfigError(
            source,
            key,
            f"must be a finite number >= 0 (USD; 0 means nothing may be spent), got {value}",
        )
    return float(value)


def load_config(
    path: Path, *, base_dir: Path | None = None, text: str | None = None
) -> SweepConfig:
    """Read and validate a sweep config. `base_dir` resolves relative paths (a resumed run
    passes the directory of the original config, since it reads the copy in the run dir)."""
    path = Path(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(path, "", f"cannot read the config: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(
                path, "", f"not UTF-8 text (byte {exc.start}); save the file as UTF-8"
            ) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, "", f"not valid TOML: {exc}") from exc
    base = (base_dir or path.parent).resolve()
    top = _Section(path, "", raw)
    top.only({"run", "models", "benchmarks"})
    run = _Section(path, "run", top.require("run", dict))
    run.only({"name", "runs_dir", "budget_usd"})
    name = check_run_name(path, run.require("name", str))
    runs_dir = Path(_printable(run, "runs_dir", run.get("runs_dir", str, "runs")))
    models = _models(path, top.require("models", list))
    benchmarks = _benchmarks(path, top.require("benchmarks", list), base, models)
    return SweepConfig(
        path=path,
        name=name,
        runs_dir=runs_dir if runs_dir.is_absolute() else base / runs_dir,
        models=models,
        benchmarks=benchmarks,
        budget_usd=check_budget(run.get("budget_usd", NUMBER, None), path, "run.budget_usd"),
        text=text,
    )


def _printable(sec: _Section, name: str, value: str) -> str:
    if not value.isprintable():
        raise ConfigError(
            sec.path, sec.key(name), "holds control characters (NUL, tab, newline, ...)"
        )
    return value


_MODEL_KEYS = {
    "key",
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "params",
    "passthrough",
    "limits",
    "reasoning",
    "price",
    "region",
    "reasoning_effort",
    "reasoning_budget",
    "api_version",
    *BATCH_MODEL_KEYS,
}


def _models(path: Path, items: list[Any]) -> tuple[ModelConfig, ...]:
    if not items:
        raise ConfigError(path, "models", "needs at least one [[models]] entry")
    seen: set[str] = set()
    out = []
    for i, item in enumerate(items):
        sec = _Section(path, f"models[{i}]", item)
        sec.only(_MODEL_KEYS)
        model = _model(sec)
        if model.key in seen:
            raise ConfigError(path, sec.key("key"), f"duplicate model key {model.key!r}")
        seen.add(model.key)
        out.append(model)
    return tuple(out)


def _model(sec: _Section) -> ModelConfig:
    provider = sec.require("provider", str)
    key = _printable(sec, "key", sec.require("key", str))
    model = sec.get("model", str, key if provider == "baseline" else None)
    if model is None:
        raise ConfigError(sec.path, sec.key("model"), "is required")
    base_url, key_env = _provider_defaults(sec, provider)
    reasoning = sec.get("reasoning", str, "default")
    if reasoning not in REASONING_CHOICES:
        raise ConfigError(
            sec.path, sec.key("reasoning"), f"must be one of {', '.join(REASONING_CHOICES)}"
        )
    extra = {"region": sec.get("region", str)} if "region" in sec.data else {}
    effort = _nonempty(sec, "reasoning_effort")
    budget = sec.positive("reasoning_budget", int, None)
    price = _price(sec) or _default_price(sec, provider, model)
    mode, batch = _batch_settings(sec, provider, price)
    return ModelConfig(
        key=key,
        provider=provider,
        model=model,
        base_url=check_base_url(
            sec.path, sec.key("base_url"), provider, sec.get("base_url", str, base_url)
        ),
        api_key_env=check_key_env(
            sec.path, sec.key("api_key_env"), sec.get("api_key_env", str, key_env)
        ),
        params=_params(sec, provider),
        limits=_limits(_Section(sec.path, sec.key("limits"), sec.get("limits", dict, {}))),
        reasoning=reasoning,
        price=batch_price(price, batch.discount) if batch else price,
        extra=extra,
        reasoning_effort=_reasoning_only(sec, reasoning, "reasoning_effort", effort),
        reasoning_budget=_reasoning_only(sec, reasoning, "reasoning_budget", budget),
        api_version=_api_version(sec, provider),
        mode=mode,
        batch=batch,
    )


def _reasoning_only(sec: _Section, reasoning: str, name: str, value: Any) -> Any:
    """Effort and budget refine reasoning = "on"; elsewhere they would silently go unsent."""
    if value is not None and reasoning != "on":
        raise ConfigError(sec.path, sec.key(name), 'applies only with reasoning = "on"')
    return value


def _api_version(sec: _Section, provider: str) -> str | None:
    version = _nonempty(sec, "api_version")
    if version is not None and (
        provider == "baseline" or _preset(sec, provider).kind not in ("anthropic", "gemini")
    ):
        raise ConfigError(
            sec.path, sec.key("api_version"), "applies to anthropic and gemini endpoints only"
        )
    return version


def _nonempty(sec: _Section, name: str) -> str | None:
    value: str | None = sec.get(name, str)
    if value is not None and not value.strip():
        raise ConfigError(sec.path, sec.key(name), "must not be empty")
    return value


def _provider_defaults(sec: _Section, provider: str) -> tuple[str, str | None]:
    if provider == "baseline":
        return "", None
    preset = _preset(sec, provider)
    return preset.base_url or "", preset.api_key_env


def _params(sec: _Section, provider: str) -> dict[str, Any]:
    """[models.params] checked against the adapter's known parameters, with
    [models.passthrough] (sent unchecked) merged in: one request body, one identity."""
    from evaltally.adapters.params import non_finite, param_problem

    params: dict[str, Any] = sec.get("params", dict, {})
    passthrough: dict[str, Any] = sec.get("passthrough", dict, {})
    for table, values in (("params", params), ("passthrough", passthrough)):
        for name, value in values.items():
            if non_finite(value):
                raise ConfigError(
                    sec.path, sec.key(f"{table}.{name}"), "holds inf or nan, which no API accepts"
                )
    if provider != "baseline":
        preset = _preset(sec, provider)
        for name, value in params.items():
            problem = param_problem(preset.kind, preset.reasoning_style, name, value)
            if problem:
                raise ConfigError(sec.path, sec.key(f"params.{name}"), problem)
    for name in sorted(set(params) & set(passthrough)):
        raise ConfigError(
            sec.path, sec.key(f"passthrough.{name}"), "is also set in [models.params]"
        )
    return {**params, **passthrough}


def _preset(sec: _Section, provider: str) -> Any:
    from evaltally.adapters import resolve_provider
    from evaltally.errors import EvaltallyError

    try:
        return resolve_provider(provider)
    except EvaltallyError as exc:
        raise ConfigError(sec.path, sec.key("provider"), str(exc)) from exc


def _default_price(sec: _Section, provider: str, model: str) -> Price | None:
    """The preset's dated list price (docs/providers.md) when the config gives none."""
    if provider == "baseline":
        return None
    from evaltally.adapters.prices import lookup

    listed = lookup(_preset(sec, provider).prices, model)
    return Price(listed.input_per_mtok, listed.output_per_mtok) if listed else None


def _limits(sec: _Section) -> Limits:
    sec.only(set(Limits.__dataclass_fields__))
    d = Limits()
    return Limits(
        concurrency=sec.positive("concurrency", int, d.concurrency),
        rpm=sec.positive("rpm", NUMBER, d.rpm),
        tpm=sec.positive("tpm", NUMBER, d.tpm),
        timeout_s=sec.positive("timeout_s", NUMBER, d.timeout_s),
        max_response_bytes=sec.positive("max_response_bytes", int, d.max_response_bytes),
        max_attempts=sec.positive("max_attempts", int, d.max_attempts),
        breaker_threshold=sec.positive("breaker_threshold", int, d.breaker_threshold),
        breaker_cooldown_s=sec.positive("breaker_cooldown_s", NUMBER, d.breaker_cooldown_s),
        backoff_initial_s=sec.positive("backoff_initial_s", NUMBER, d.backoff_initial_s),
        backoff_max_s=sec.positive("backoff_max_s", NUMBER, d.backoff_max_s),
    )


def _price(sec: _Section) -> Price | None:
    raw = sec.get("price", dict)
    if raw is None:
        return None
    p = _Section(sec.path, sec.key("price"), raw)
    p.only({"input_per_mtok", "output_per_mtok"})
    prices = []
    for name in ("input_per_mtok", "output_per_mtok"):
        p.require(name, NUMBER)
        value = float(p.number(name, NUMBER, None))
        if value < 0:
            raise ConfigError(sec.path, p.key(name), f"must be >= 0, got {value}")
        prices.append(value)
    return Price(input_per_mtok=prices[0], output_per_mtok=prices[1])


def _benchmarks(
    path: Path, items: list[Any], base: Path, models: tuple[ModelConfig, ...]
) -> tuple[BenchmarkConfig, ...]:
    # The registry imports config (benchmarks receive a BenchmarkConfig), so it is imported here.
    from evaltally.benchmarks.binding import check_baselines, read_roles
    from evaltally.benchmarks.registry import get_kind, kind_names

    if not items:
        raise ConfigError(path, "benchmarks", "needs at least one [[benchmarks]] entry")
    out: list[BenchmarkConfig] = []
    for i, item in enumerate(items):
        sec = _Section(path, f"benchmarks[{i}]", item)
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
        roles = _Section(path, sec.key("roles"), sec.get("roles", dict, {}))
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


# -- batch mode (docs/batch.md) ---------------------------------------------------------------


def batch_price(price: Price | None, discount: float | None) -> Price | None:
    """The price of a batch call: the list price times the documented batch discount."""
    if price is None or discount is None:
        return price
    return Price(price.input_per_mtok * discount, price.output_per_mtok * discount)


def _batch_settings(
    sec: _Section, provider: str, price: Price | None
) -> tuple[str, BatchSettings | None]:
    mode = sec.get("mode", str, "sync")
    if mode not in MODES:
        raise ConfigError(sec.path, sec.key("mode"), f"must be one of {', '.join(MODES)}")
    if mode == "sync":
        for key in ("batch_fallback", "batch"):
            if key in sec.data:
                raise ConfigError(sec.path, sec.key(key), 'applies only with mode = "batch"')
        return mode, None
    from evaltally.adapters.batch import BATCH_SUPPORT, batch_support

    support = None if provider == "baseline" else batch_support(_preset(sec, provider).name)
    if support is None:
        raise ConfigError(
            sec.path,
            sec.key("mode"),
            f"provider {provider!r} has no batch API here; batch mode works with "
            f"{', '.join(sorted(BATCH_SUPPORT))} (docs/providers.md)",
        )
    fallback = sec.get("batch_fallback", str, "none")
    if fallback not in BATCH_FALLBACKS:
        raise ConfigError(
            sec.path, sec.key("batch_fallback"), f"must be one of {', '.join(BATCH_FALLBACKS)}"
        )
    tuning = _Section(sec.path, sec.key("batch"), sec.get("batch", dict, {}))
    tuning.only({"poll_s", "max_requests", "max_bytes", "discount"})
    limits = support.limits
    settings = BatchSettings(
        kind=support.kind,
        max_requests=tuning.positive("max_requests", int, limits.max_requests),
        max_bytes=tuning.positive("max_bytes", int, limits.max_bytes),
        discount=tuning.positive("discount", NUMBER, support.discount),
        list_price=price,
        fallback=fallback,
        poll_s=tuning.positive("poll_s", NUMBER, BatchSettings.poll_s),
    )
    for name, cap in (("max_requests", limits.max_requests), ("max_bytes", limits.max_bytes)):
        if getattr(settings, name) > cap:
            raise ConfigError(
                sec.path, tuning.key(name), f"must be <= {cap:,}, the provider's documented limit"
            )
    if settings.discount is not None and settings.discount > 1:
        raise ConfigError(sec.path, tuning.key("discount"), "is a fraction of the list price: <= 1")
    return mode, settings


def read_api_keys(config: SweepConfig, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Model key -> API key, read from the named variables. Every missing variable is reported
    at once, before anything is sent. The message names variables, never values."""
    env = os.environ if env is None else env
    keys: dict[str, str] = {}
    missing: list[str] = []
    garbled: list[str] = []
    for m in config.models:
        if not m.api_key_env:
            continue
        value = env.get(m.api_key_env, "")
        redact.remember(value)
        redact.remember(value.strip())
        if not value:
            missing.append(f"  model {m.key!r} needs ${m.api_key_env}")
        elif not redact.header_safe(value):
            garbled.append(f"  model {m.key!r}: ${m.api_key_env}")
        else:
            keys[m.key] = value
    if missing:
        raise CredentialError(
            f"{config.path}: API key variables are not set:\n"
            + "\n".join(missing)
            + "\nexport them (or set api_key_env to the variable that holds each key)."
        )
    if garbled:
        raise CredentialError(
            f"{config.path}: API key variables hold whitespace or control characters "
            "(a trailing \\r from a file saved on Windows? quotes?); values not shown:\n"
            + "\n".join(garbled)
        )
    return keys
