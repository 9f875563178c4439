"""An answer without content is never `ok` (issue 8, item 18): an empty text is a parse_error
naming the finish reason; a null content with no reason for it is a bad body, retried, then
failed."""

from __future__ import annotations

from pathlib import Path

import orjson
from hostile_kit import Model, run_and_inspect, write_hostile_config
from hostile_server import Answer, HostileServer, Seen


def answer(seen: Seen) -> Answer:
    content = "" if seen.mentions("empty") else None
    message = {"role": "assistant", "content": content}
    body = {"choices": [{"message": message, "finish_reason": "stop"}]}
    return Answer(body=orjson.dumps(body))


def test_empty_and_null_answers_are_not_ok(tmp_path: Path) -> None:
    models = [Model("empty", "openai", "empty"), Model("null", "openai", "null")]
    with HostileServer(answer) as server:
        session = run_and_inspect(write_hostile_config(tmp_path, server.base_url, models))
    rows = session.rows()
    assert rows["empty"]["status"] == "parse_error"
    assert "empty answer (finish reason: stop)" in rows["empty"]["reason"]
    assert rows["null"]["status"] == "failed"
    assert "bad_body" in rows["null"]["reason"] and "content is null" in rows["null"]["reason"]
    assert sum(seen.mentions("null") for seen in server.requests) == 2  # max_attempts
