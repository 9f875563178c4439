"""Provider wire formats the mock speaks, one module each."""

from __future__ import annotations

from evaltally.mockserver.dialects.anthropic import AnthropicDialect
from evaltally.mockserver.dialects.base import ClientFault, Dialect, ErrorReply, ReplyContext
from evaltally.mockserver.dialects.bedrock import BedrockDialect
from evaltally.mockserver.dialects.gemini import GeminiDialect
from evaltally.mockserver.dialects.openai import OpenAIDialect

DIALECTS: tuple[Dialect, ...] = (
    OpenAIDialect(),
    AnthropicDialect(),
    GeminiDialect(),
    BedrockDialect(),
)

__all__ = [
    "DIALECTS",
    "AnthropicDialect",
    "BedrockDialect",
    "ClientFault",
    "Dialect",
    "ErrorReply",
    "GeminiDialect",
    "OpenAIDialect",
    "ReplyContext",
]
