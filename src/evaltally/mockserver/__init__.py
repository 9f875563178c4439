"""A local mock LLM provider for tests, demos, rehearsals and benchmarks.

Speaks OpenAI Chat Completions, Anthropic Messages, Gemini generateContent and Bedrock Converse;
enforces RPM/TPM like a provider; injects faults on a deterministic schedule or at seeded random
rates; answers deterministically or from a script. See docs/mock-server.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evaltally.mockserver.config import MockConfig
from evaltally.mockserver.fault_rules import FAULT_KINDS, FaultRule

if TYPE_CHECKING:
    from evaltally.mockserver.server import MockServer, serve


def __getattr__(name: str) -> Any:
    # The server (aiohttp.web and the dialects) loads on first use, so `tally status` and
    # friends, which register the mock-server command, do not pay for importing it.
    if name in ("MockServer", "serve"):
        from evaltally.mockserver import server

        return getattr(server, name)
    raise AttributeError(name)


__all__ = ["FAULT_KINDS", "FaultRule", "MockConfig", "MockServer", "serve"]
