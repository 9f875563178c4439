"""A local mock LLM provider for tests, demos, rehearsals and benchmarks.

Speaks OpenAI Chat Completions, Anthropic Messages, Gemini generateContent and Bedrock Converse;
enforces RPM/TPM like a provider; injects faults on a deterministic schedule or at seeded random
rates; answers deterministically or from a script. See docs/mock-server.md.
"""

from __future__ import annotations

from evaltally.mockserver.config import FAULT_KINDS, FaultRule, MockConfig
from evaltally.mockserver.server import MockServer, serve

__all__ = ["FAULT_KINDS", "FaultRule", "MockConfig", "MockServer", "serve"]
