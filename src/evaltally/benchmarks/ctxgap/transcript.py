"""The actor view: the acting agent's own transcript, a message list in the input format.

A `views.jsonl` line may give `messages` (instead of `text` or `text_file`): the chat the actor
had while doing the task, up to the checkpoint. The actor is asked each probe by continuing that
chat with one more user turn (prompts/ctxgap.py, `render_actor`), so its accuracy is measured on
the same probes and judged by the same judge as the observers' views (docs/ctxgap.md).
"""

from __future__ import annotations

from evaltally.records import Message

from .fields import Line

ROLES = ("system", "user", "assistant")


def transcript(line: Line) -> tuple[Message, ...] | None:
    """The line's `messages`, checked (None when the view is a text view)."""
    if "messages" not in line.obj:
        return None
    if "text" in line.obj or "text_file" in line.obj:
        raise line.error("messages", "give exactly one of text, text_file and messages")
    value = line.obj["messages"]
    if not isinstance(value, list) or not value:
        raise line.error("messages", "must be a non-empty list of {role, content} messages")
    out: list[Message] = []
    for i, m in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or set(m) != {"role", "content"}:
            raise line.error(where, "must be an object with exactly role and content")
        role, content = m["role"], m["content"]
        if role not in ROLES or (role == "system" and i > 0):
            raise line.error(
                f"{where}.role", "must be user or assistant (system only as the first message)"
            )
        if not isinstance(content, str) or not content.strip():
            raise line.error(f"{where}.content", "must be a non-empty string")
        out.append({"role": role, "content": content})
    if out[-1]["role"] != "assistant":
        raise line.error(
            "messages", "must end with the actor's own (assistant) turn: the probe follows it"
        )
    return tuple(out)


def transcript_text(messages: tuple[Message, ...]) -> str:
    """The transcript as one text (what a reader of it sees; the stand-ins and hashes use it)."""
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages)
