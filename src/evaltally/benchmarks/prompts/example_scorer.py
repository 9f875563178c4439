"""An example of a user's own scorer (`scorer = "module:function"`), used by the scored demo.

A scorer is a pure function `(item, answer) -> bool | float in [0, 1]`: `item` is the item as
read (`id`, `target`, and `choices` and `meta` when it has them), `answer` the raw answer text.
An optional `version` attribute is recorded with every score; change it when the function
changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def last_word(item: Mapping[str, Any], answer: str) -> bool:
    """The answer's last word (without its final punctuation) is one of the targets,
    ignoring case."""
    words = answer.split()
    if not words:
        return False
    got = words[-1].strip(".,;:!?").casefold()
    targets = item["target"] if isinstance(item["target"], list) else [item["target"]]
    return any(got == str(t).casefold() for t in targets)


last_word.version = "1"  # type: ignore[attr-defined]
