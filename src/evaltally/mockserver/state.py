"""The live state of one mock server: current config and what it derives (limits, schedule,
script), plus the counters. Reconfiguring at runtime keeps whatever the change does not touch,
so starting an outage through POST /control does not refill the rate-limit buckets.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
from typing import Any

from evaltally.mockserver.answers import Completion, Prompt, Script, complete, generated_answer
from evaltally.mockserver.config import MockConfig
from evaltally.mockserver.dialects.base import AuthSettings
from evaltally.mockserver.faults import FaultPlanner
from evaltally.mockserver.ratelimit import RateLimiter
from evaltally.mockserver.stats import Stats

_LIMIT_KNOBS = (
    "rpm",
    "tpm",
    "rpm_burst",
    "tpm_burst",
    "limit_mode",
    "limit_window_s",
    "advertise_factor",
)


class MockState:
    def __init__(self, config: MockConfig) -> None:
        self.stats = Stats()
        self._seq = itertools.count(1)
        self.config = config
        self.planner = FaultPlanner(config)
        self.limiter = _limiter(config)
        self.script = Script.load(config.answers_file) if config.answers_file else None
        self.auth = AuthSettings(config.require_auth, config.api_key)
        self.models = frozenset(config.models)
        self._id_prefix = hashlib.sha256(f"ids:{config.seed}".encode()).hexdigest()[:16]

    def next_request_id(self) -> str:
        """32 hex chars from (seed, counter): unique within the server, reproducible per seed,
        and random-looking in every prefix (dialects shorten it)."""
        data = f"{self._id_prefix}:{next(self._seq)}".encode()
        return hashlib.blake2b(data, digest_size=16).hexdigest()

    def completion(self, prompt: Prompt, body_hash: str, finish: str = "stop") -> Completion:
        """The model's answer to a request: scripted if a script line matches, else the fixed
        default answer, else generated from (seed, body). The synchronous endpoints and the
        batch endpoints answer the same body with the same completion."""
        cfg = self.config
        reasoning = cfg.reasoning_tokens
        script = self.script
        line, index = script.find(prompt) if script is not None else (None, -1)
        if line is not None and script is not None:
            text = script.answer_for(line, index, body_hash)
            if line.finish is not None and finish == "stop":
                finish = line.finish
            if line.reasoning_tokens is not None:
                reasoning = line.reasoning_tokens
        elif cfg.default_answer is not None:
            text = cfg.default_answer
        else:
            text = generated_answer(cfg.seed, body_hash)
        if finish == "blocked":
            text, reasoning = "", 0
        done = complete(
            prompt, text, finish=finish, reasoning_tokens=reasoning, cached_tokens=cfg.cached_tokens
        )
        return dataclasses.replace(
            done, reasoning_shape=cfg.reasoning_shape, block_reason=cfg.block_reason
        )

    def update(self, knobs: dict[str, Any], source: str = "<control>") -> MockConfig:
        """Change knobs at runtime (strict: unknown keys raise ConfigError, nothing changes)."""
        old = self.config
        new = old.replace(knobs, source=source)
        script = self.script
        if new.answers_file != old.answers_file:
            script = Script.load(new.answers_file) if new.answers_file else None
        # Everything that can fail is done; now swap in one go.
        if new.faults != old.faults:
            self.planner = FaultPlanner(new)
        else:
            self.planner = self.planner.with_config(new)
        if any(getattr(new, k) != getattr(old, k) for k in _LIMIT_KNOBS):
            self.limiter = _limiter(new)
        self.script = script
        self.auth = AuthSettings(new.require_auth, new.api_key)
        self.models = frozenset(new.models)
        self.config = new
        return new

    def reset_stats(self) -> None:
        """Zero the counters. Per-body attempt numbers restart too ("body" fault rules apply
        again to bodies seen before the reset)."""
        self.stats.reset()


def _limiter(config: MockConfig) -> RateLimiter:
    return RateLimiter(
        config.rpm,
        config.tpm,
        config.rpm_burst,
        config.tpm_burst,
        mode=config.limit_mode,
        window_s=config.limit_window_s,
        advertise_factor=config.advertise_factor,
    )
