"""A model's mode (synchronous or batch) and, in batch mode, its batch settings and batch price
(docs/batch.md): the provider's documented limits and discount, tightened by `[models.batch]`.
"""

from __future__ import annotations

from evaltally.config.provider import preset
from evaltally.config.records import BatchSettings, Price
from evaltally.config.section import NUMBER, Section
from evaltally.errors import ConfigError

MODES = ("sync", "batch")
BATCH_FALLBACKS = ("none", "sync")
BATCH_MODEL_KEYS = ("mode", "batch_fallback", "batch")
"""The keys of a `[[models]]` entry read here."""
POLL_RANGE_S = (0.01, 3600.0)
"""Faster polls only spend the provider's rate limit; slower ones leave results waiting hours."""
UNKNOWN_STATE_RANGE_S = (0.0, 7 * 86400.0)


def batch_price(price: Price | None, discount: float | None) -> Price | None:
    """The price of a batch call: the list price times the documented batch discount."""
    if price is None or discount is None:
        return price
    return Price(price.input_per_mtok * discount, price.output_per_mtok * discount)


def batch_settings(
    sec: Section, provider: str, price: Price | None
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

    support = None if provider == "baseline" else batch_support(preset(sec, provider).name)
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
    tuning = Section(sec.path, sec.key("batch"), sec.get("batch", dict, {}))
    tuning.only({"poll_s", "unknown_state_s", "max_requests", "max_bytes", "discount"})
    limits = support.limits
    settings = BatchSettings(
        kind=support.kind,
        max_requests=tuning.positive("max_requests", int, limits.max_requests),
        max_bytes=tuning.positive("max_bytes", int, limits.max_bytes),
        discount=tuning.positive("discount", NUMBER, support.discount),
        list_price=price,
        fallback=fallback,
        poll_s=_within(tuning, "poll_s", BatchSettings.poll_s, POLL_RANGE_S),
        unknown_state_s=_within(
            tuning, "unknown_state_s", BatchSettings.unknown_state_s, UNKNOWN_STATE_RANGE_S
        ),
    )
    for name, cap in (("max_requests", limits.max_requests), ("max_bytes", limits.max_bytes)):
        if getattr(settings, name) > cap:
            raise ConfigError(
                sec.path, tuning.key(name), f"must be <= {cap:,}, the provider's documented limit"
            )
    if settings.discount is not None and settings.discount > 1:
        raise ConfigError(sec.path, tuning.key("discount"), "is a fraction of the list price: <= 1")
    return mode, settings


def _within(sec: Section, name: str, default: float, bounds: tuple[float, float]) -> float:
    value = float(sec.number(name, NUMBER, default))
    low, high = bounds
    if not low <= value <= high:
        raise ConfigError(
            sec.path, sec.key(name), f"must be between {low:g} and {high:g} seconds, got {value:g}"
        )
    return value
