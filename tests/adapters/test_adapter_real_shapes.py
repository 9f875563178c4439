"""Responses in the shapes hosts really send (their documentation and recorded answers): inline
thinking, Mistral's thinking parts, usage that does not add up, Vertex's Model Armor, usage left
out, and the 400/404 each provider sends for a model id it does not serve."""

from __future__ import annotations

from typing import Any

import pytest
from adapter_testkit import response

from evaltally.adapters.anthropic import AnthropicAdapter
from evaltally.adapters.bedrock import BedrockAdapter
from evaltally.adapters.gemini import GeminiAdapter
from evaltally.adapters.openai import OpenAIAdapter
from evaltally.adapters.thinking import ThinkTags, split_thinking
from evaltally.ledger.usage import NO_USAGE, bound_usage
from evaltally.records import REASONING_INFERRED, AttemptError, Completion, ErrorAction

ANSWER = '{"status": 200}'


def chat(content: Any, usage: dict[str, Any] | None, finish: str = "stop") -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def read(body: dict[str, Any], adapter: OpenAIAdapter | None = None) -> Completion:
    result = (adapter or OpenAIAdapter()).parse_response(response(body))
    assert isinstance(result, Completion), result
    return result


USAGE = {"prompt_tokens": 20, "completion_tokens": 300, "total_tokens": 320}


@pytest.mark.parametrize(
    "content",
    [
        # DeepSeek-R1 through Together / a router without a reasoning parser
        f"<think>\nThe user wants the status. Service B returned 200.\n</think>\n\n{ANSWER}",
        # Groq with reasoning_format = "raw": no blank line after the block
        f"<think>The user wants the status. Service B returned 200.</think>{ANSWER}",
        # vLLM serving DeepSeek-R1 with its chat template: <think> was in the prompt
        f"The user wants the status. Service B returned 200.\n</think>\n\n{ANSWER}",
        # Ollama's OpenAI-compatible endpoint, leading newline
        f"\n<think>\nThe user wants the status. Service B returned 200.\n</think>\n{ANSWER}",
    ],
)
def test_inline_thinking_is_split_from_the_answer(content: str) -> None:
    done = read(chat(content, USAGE))
    assert done.text == ANSWER
    assert done.usage.output_tokens == 300
    assert done.usage.reasoning_tokens > 0  # the provider counted none: estimated
    assert done.usage.note is not None and done.usage.note.startswith(REASONING_INFERRED)


def test_qwen3_empty_think_block_is_no_reasoning() -> None:
    # Qwen3 with thinking switched off still writes an empty block before the answer.
    done = read(chat(f"<think>\n\n</think>\n\n{ANSWER}", USAGE))
    assert done.text == ANSWER
    assert done.usage.reasoning_tokens == 0
    assert done.usage.note is None


def test_thinking_cut_by_the_budget_leaves_no_answer() -> None:
    done = read(chat("<think>\nStep 1: read the logs. Step 2", USAGE, finish="length"))
    assert done.text == ""
    assert done.finish_reason == "length"
    assert done.usage.reasoning_tokens > 0


def test_a_tag_inside_the_answer_is_answer_text() -> None:
    content = "Use <think> and </think> tags to mark reasoning."
    assert read(chat(content, USAGE)).text == content


def test_inline_thinking_off_and_custom_tags() -> None:
    content = f"<think>x</think>{ANSWER}"
    assert read(chat(content, USAGE), OpenAIAdapter(inline_thinking=None)).text == content
    tags = ThinkTags(open="<reasoning>", close="</reasoning>")
    custom = read(
        chat(f"<reasoning>why</reasoning>\n{ANSWER}", USAGE), OpenAIAdapter(inline_thinking=tags)
    )
    assert custom.text == ANSWER
    assert split_thinking("plain", tags) == ("plain", None)


def test_a_provider_count_wins_over_the_estimate() -> None:
    usage = USAGE | {"completion_tokens_details": {"reasoning_tokens": 250}}
    done = read(chat(f"<think>short</think>{ANSWER}", usage))
    assert done.usage.reasoning_tokens == 250
    assert done.usage.note is None


def test_mistral_thinking_parts() -> None:
    # Magistral: content is a list; a "thinking" part holds a list of text chunks.
    content = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "Service B answered 200."}]},
        {"type": "text", "text": ANSWER},
    ]
    done = read(chat(content, USAGE))
    assert done.text == ANSWER
    assert done.usage.reasoning_tokens > 0


def test_gemini_openai_compatible_usage_with_thinking_only_in_the_total() -> None:
    done = read(chat(ANSWER, {"prompt_tokens": 66, "completion_tokens": 6, "total_tokens": 100}))
    assert done.usage.input_tokens == 66
    assert done.usage.reasoning_tokens == 28
    assert done.usage.output_tokens == 34  # billed as output
    assert done.usage.note is not None and "total_tokens" in done.usage.note


def test_a_body_without_usage_records_empty_counts() -> None:
    done = read(chat(ANSWER, None))
    assert not done.usage.reported
    assert bound_usage(done.usage) == (NO_USAGE, None)
    thought = read(chat(f"<think>why</think>{ANSWER}", None))
    counts, note = bound_usage(thought.usage)
    assert counts[:2] == (None, None) and counts[2] == 1 and counts[3] is None
    assert note is not None


def test_gemini_model_armor_is_a_block() -> None:
    body = {
        "candidates": [{"finishReason": "MODEL_ARMOR", "index": 0}],
        "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
    }
    done = GeminiAdapter().parse_response(response(body))
    assert isinstance(done, Completion)
    assert done.finish_reason == "safety:MODEL_ARMOR"
    blocked = {"promptFeedback": {"blockReason": "MODEL_ARMOR"}, "usageMetadata": {}}
    prompt = GeminiAdapter().parse_response(response(blocked))
    assert isinstance(prompt, Completion) and prompt.finish_reason == "safety:prompt:MODEL_ARMOR"


GEMINI_404 = {
    "error": {
        "code": 404,
        "message": "models/gemini-2.5-flash-preview-thinking-exp-0917abcdefghijk is not found "
        "for API version v1beta, or is not supported for generateContent. Call ListModels to "
        "see the list of available models and their supported methods.",
        "status": "NOT_FOUND",
    }
}


@pytest.mark.parametrize(
    ("adapter", "status", "body", "headers"),
    [
        (
            OpenAIAdapter(),
            404,
            {
                "error": {
                    "message": "The model `gpt-5.4-mini-typo` does not exist or you do not have "
                    "access to it.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "model_not_found",
                }
            },
            {},
        ),
        (  # Groq
            OpenAIAdapter(),
            404,
            {
                "error": {
                    "message": "The model `llama-3.3-70b-versatil` does not exist or you do not "
                    "have access to it.",
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }
            },
            {},
        ),
        (  # OpenRouter
            OpenAIAdapter(),
            400,
            {"error": {"message": "deepseek/deepseek-r2 is not a valid model ID", "code": 400}},
            {},
        ),
        (  # Mistral
            OpenAIAdapter(),
            400,
            {"object": "error", "message": "Invalid model: magistral-big", "type": "invalid_model"},
            {},
        ),
        (  # Ollama
            OpenAIAdapter(),
            404,
            {"error": {"message": 'model "qwen3:32" not found, try pulling it first'}},
            {},
        ),
        (  # a base_url whose path is wrong: the server's own HTML page
            OpenAIAdapter(),
            404,
            b"<html><body><h1>404 Not Found</h1></body></html>",
            {},
        ),
        (
            AnthropicAdapter(),
            404,
            {
                "type": "error",
                "error": {"type": "not_found_error", "message": "model: claude-sonet-4-5"},
            },
            {},
        ),
        (GeminiAdapter(), 404, GEMINI_404, {}),
        (
            BedrockAdapter(
                env={
                    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
                    "AWS_SECRET_ACCESS_KEY": "x" * 40,
                    "AWS_REGION": "us-east-1",
                }
            ),
            400,
            {"message": "The provided model identifier is invalid."},
            {"x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/"},
        ),
    ],
)
def test_model_not_found_stops_the_lane(
    adapter: Any, status: int, body: Any, headers: dict[str, str]
) -> None:
    result = adapter.parse_response(response(body, status, headers))
    assert isinstance(result, AttemptError)
    assert result.action is ErrorAction.STOP_LANE
    assert result.stop_kind == "model"


def test_a_request_specific_400_still_fails_only_the_call() -> None:
    body = {
        "error": {
            "message": "This model's maximum context length is 8192 tokens. However, your "
            "messages resulted in 9000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    result = OpenAIAdapter().parse_response(response(body, 400))
    assert isinstance(result, AttemptError) and result.action is ErrorAction.FAIL_CALL


def test_the_wrong_model_id_stays_readable() -> None:
    result = GeminiAdapter().parse_response(response(GEMINI_404, 404))
    assert isinstance(result, AttemptError)
    assert "gemini-2.5-flash-preview-thinking-exp-0917abcdefghijk" in result.detail
    assert "[redacted]" not in result.detail
