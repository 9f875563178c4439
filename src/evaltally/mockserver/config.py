"""The mock provider's knobs: one frozen dataclass, validated once, replaced (never mutated).

Every knob can come from Python (`MockConfig(...)`), from a mapping (`MockConfig.from_mapping`,
used by TOML files, `POST /control` and the CLI) or from CLI flags. Unknown keys are errors, so
a typo in a rehearsal config never silently turns a fault off.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaltally.errors import ConfigError
from evaltally.mockserver.answers import REASONING_SHAPES
from evaltally.mockserver.batch.knobs import (
    BATCH_KNOBS,
    BatchFault,
    coerce_batch_knob,
    validate_batch_knobs,
)
from evaltally.mockserver.fault_rules import FaultRule
from evaltally.mockserver.ratelimit import MODES


@dataclass(frozen=True)
class MockConfig:
    """Every knob of the mock provider. Defaults: an instant, fault-free, unlimited provider."""

    # Seed of every pseudo-random choice (answers, random faults, jitter). Same seed + same request
    # body + same attempt number -> same outcome, whatever the arrival order.
    seed: int = 0
    # Fixed delay before each answer, plus a uniform extra in [0, latency_jitter_ms).
    latency_ms: float = 0.0
    latency_jitter_ms: float = 0.0
    # Extra delay per generated token, to imitate decoding speed (0: off).
    ms_per_output_token: float = 0.0
    # Requests per minute and tokens per minute (None: unlimited). Token buckets refill
    # continuously at rate/60 per second; a request costs 1 request and (prompt estimate +
    # max_tokens) tokens, as OpenAI counts it.
    rpm: int | None = None
    tpm: int | None = None
    # How rpm/tpm are enforced: "token_bucket", "fixed_window" or "sliding_window"
    # (docs/mock-server.md, "Rate limits").
    limit_mode: str = "token_bucket"
    # Window length in seconds: the fixed/sliding window, or the bucket's burst period.
    limit_window_s: float = 1.0
    # Token-bucket capacities (burst). None: limit_window_s worth of the rate, at least 1.
    rpm_burst: int | None = None
    tpm_burst: int | None = None
    # Send the dialect's rate-limit headers (on every response, 429s included).
    ratelimit_headers: bool = True
    # The headers claim this many times the enforced limit and remaining (1: the truth).
    advertise_factor: float = 1.0
    # Probabilities (0..1, summing to <= 1) of random faults, drawn per (body, attempt).
    error_429_rate: float = 0.0
    error_500_rate: float = 0.0
    error_502_rate: float = 0.0
    error_503_rate: float = 0.0
    overloaded_rate: float = 0.0  # HTTP 529 (Anthropic's overloaded_error)
    drop_rate: float = 0.0  # close the connection without a response
    hang_rate: float = 0.0  # answer only after hang_s (beyond any sane client timeout)
    malformed_rate: float = 0.0  # split evenly: HTML 200, HTML 502, truncated JSON 200
    safety_rate: float = 0.0  # answer stopped by a safety filter (Gemini finishReason SAFETY)
    prompt_block_rate: float = 0.0  # prompt blocked (Gemini promptFeedback.blockReason)
    # How long a hanging request sleeps before it finally answers 504.
    hang_s: float = 30.0
    # Retry-After (seconds) sent with injected 429/503/529 (None: no header on 503/529).
    retry_after_s: float | None = 1.0
    # Deterministic fault schedule, applied before rate limits and random faults.
    faults: tuple[FaultRule, ...] = ()
    # JSONL of scripted answers (see docs/mock-server.md); None: generated answers only.
    answers_file: Path | None = None
    # Fixed answer text for every unscripted request (None: {"ok": true, "mock": "<8 hex>"}).
    default_answer: str | None = None
    # Reasoning/thinking tokens reported per answer (counted inside completion tokens).
    reasoning_tokens: int = 0
    # Prompt tokens reported as served from the provider's cache (capped at the prompt size).
    cached_tokens: int = 0
    # Where the OpenAI dialect shows those reasoning tokens (answers.REASONING_SHAPES): "usage"
    # (a count), "inline" (<think> in the content), "parts" (Mistral), "total_only" (Gemini's
    # compatible endpoint).
    reasoning_shape: str = "usage"
    # The reason a Gemini safety stop or blocked prompt names ("SAFETY", "MODEL_ARMOR", ...).
    block_reason: str = "SAFETY"
    # Require the dialect's credential header (Bearer, x-api-key, x-goog-api-key, SigV4).
    require_auth: bool = True
    # If set, the credential must equal it (Bedrock: the access key id in Credential=...).
    api_key: str | None = None
    # If non-empty, other model names get the dialect's 404.
    models: tuple[str, ...] = field(default_factory=tuple)

    # -- batch endpoints (mockserver/batch/; docs/mock-server.md, "Batch endpoints") --------
    # Seconds a new batch spends validating, in progress and finalizing before it completes.
    batch_validating_s: float = 0.05
    batch_in_progress_s: float = 0.1
    batch_finalizing_s: float = 0.05
    # Delay of every batch endpoint's answer, after it acted (stored the upload, created the
    # batch); a results download stalls this long after its first chunk. For kill tests.
    batch_latency_s: float = 0.0
    # Results are streamed in writes of this many bytes: a results file spans many reads.
    batch_chunk_bytes: int = 16384
    # Batch-level faults, used up in order per kind: [{kind, count}] (batch/knobs.py).
    batch_faults: tuple[BatchFault, ...] = ()
    # Per-line errors inside a batch: fault rules whose kind is an HTTP status.
    batch_line_faults: tuple[FaultRule, ...] = ()

    def __post_init__(self) -> None:
        self.validate()

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any], *, source: str = "<mock config>") -> MockConfig:
        """Build from a mapping (TOML table, JSON object). Keys may use '-' or '_'."""
        return cls().replace(d, source=source)

    @classmethod
    def from_toml(cls, path: Path) -> MockConfig:
        """Read a TOML file: knobs at top level or inside a [mock] table."""
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(path, "", f"cannot read mock config: {exc}") from exc
        table = data.get("mock", data)
        if not isinstance(table, dict):
            raise ConfigError(path, "mock", "must be a table")
        return cls.from_mapping(table, source=str(path))

    def replace(self, d: Mapping[str, Any], *, source: str = "<mock config>") -> MockConfig:
        """A copy with the knobs in `d` changed (strict: unknown keys raise ConfigError)."""
        names = {f.name for f in dataclasses.fields(self)}
        changes: dict[str, Any] = {}
        for raw_key, value in d.items():
            key = str(raw_key).replace("-", "_")
            if key not in names:
                raise ConfigError(
                    source, str(raw_key), f"unknown mock knob; known: {sorted(names)}"
                )
            changes[key] = _coerce(source, key, value)
        try:
            return dataclasses.replace(self, **changes)
        except ConfigError as exc:
            raise ConfigError(source, exc.key, exc.reason) from None

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly view (for GET /control and logs)."""
        out = dataclasses.asdict(self)
        out["answers_file"] = str(self.answers_file) if self.answers_file else None
        out["models"] = list(self.models)
        out["faults"] = [dataclasses.asdict(r) for r in self.faults]
        out["batch_faults"] = [dataclasses.asdict(r) for r in self.batch_faults]
        out["batch_line_faults"] = [dataclasses.asdict(r) for r in self.batch_line_faults]
        return out

    # -- validation -------------------------------------------------------------------------

    def validate(self) -> None:
        src = "<mock config>"
        for name in ("latency_ms", "latency_jitter_ms", "ms_per_output_token", "hang_s"):
            if getattr(self, name) < 0:
                raise ConfigError(src, name, "must be >= 0")
        for name in ("rpm", "tpm", "rpm_burst", "tpm_burst"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < 1):
                raise ConfigError(src, name, "must be a positive integer (or unset for unlimited)")
        if self.limit_mode not in MODES:
            raise ConfigError(src, "limit_mode", f"{self.limit_mode!r} not in {list(MODES)}")
        if not self.limit_window_s > 0:
            raise ConfigError(src, "limit_window_s", "must be > 0")
        if not self.advertise_factor > 0:
            raise ConfigError(src, "advertise_factor", "must be > 0")
        total = 0.0
        for name in RATE_KNOBS:
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ConfigError(src, name, "must be a probability in [0, 1]")
            total += v
        if total > 1.0 + 1e-9:
            raise ConfigError(src, "*_rate", f"fault rates sum to {total:.3f} > 1")
        if self.retry_after_s is not None and self.retry_after_s < 0:
            raise ConfigError(src, "retry_after_s", "must be >= 0")
        if self.reasoning_shape not in REASONING_SHAPES:
            raise ConfigError(src, "reasoning_shape", f"must be one of {REASONING_SHAPES}")
        if not self.block_reason.isupper():
            raise ConfigError(src, "block_reason", "must be an upper-case Gemini reason")
        for name in ("reasoning_tokens", "cached_tokens"):
            if getattr(self, name) < 0:
                raise ConfigError(src, name, "must be >= 0")
        for i, rule in enumerate(self.faults):
            rule.validate(f"faults[{i}]")
        validate_batch_knobs(self)


# Order matters: random faults are chosen by walking this list with one uniform draw.
RATE_KNOBS = (
    "error_429_rate",
    "error_500_rate",
    "error_502_rate",
    "error_503_rate",
    "overloaded_rate",
    "drop_rate",
    "hang_rate",
    "malformed_rate",
    "safety_rate",
    "prompt_block_rate",
)

_BOOL = frozenset({"ratelimit_headers", "require_auth"})
_INT = frozenset(
    {"seed", "rpm", "tpm", "rpm_burst", "tpm_burst", "reasoning_tokens", "cached_tokens"}
)
_OPT_STR = frozenset({"default_answer", "api_key"})
_STR = frozenset({"limit_mode", "reasoning_shape", "block_reason"})


def _coerce(source: str, key: str, value: Any) -> Any:
    """Turn TOML/JSON/CLI values into the field's type, with an error naming the key."""
    if key in BATCH_KNOBS:
        return coerce_batch_knob(source, key, value)
    try:
        if key == "faults":
            if not isinstance(value, list | tuple):
                raise ConfigError(source, key, "must be a list of {kind, count, scope, ...}")
            return tuple(
                v if isinstance(v, FaultRule) else FaultRule.from_mapping(v, f"faults[{i}]")
                for i, v in enumerate(value)
            )
        if key == "models":
            if isinstance(value, str):
                return tuple(m for m in value.split(",") if m)
            return tuple(str(m) for m in value)
        if key == "answers_file":
            return None if value in (None, "") else Path(value)
        if value is None:
            return None
        if key in _BOOL:
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
        if key in _INT:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
            return (
                int(value)
                if value != 0 or key in ("seed", "reasoning_tokens", "cached_tokens")
                else None
            )
        if key in _OPT_STR or key in _STR:
            return str(value)
        if key == "retry_after_s":
            return float(value)
        return float(value)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(source, key, f"invalid value {value!r}") from exc
