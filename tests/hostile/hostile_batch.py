"""A hostile batch provider: the OpenAI (/files + /batches), Anthropic and Gemini batch shapes,
just enough of each to take one batch and answer it, with every answer a test chooses: result
lines that are malformed, out of order or missing, state words no API documents, result files far
larger than any answer needs. A handler for `HostileServer`.

`lines(requests)` builds the result document's records from the requests in submission order,
each (call id, its prompt text) (dicts become JSON lines, bytes are sent as they are); `state`
is the state word of every poll;
`chunks` replaces the whole result document (a stream of pieces, for sizes no test keeps in
memory)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from hostile_kit import CREDENTIAL_ENV
from hostile_server import Answer, Seen, completion

from testkit import tally, write_items

Request = tuple[str, str]
"""(call id, the prompt's text) of one request in the batch."""
Lines = Callable[[list[Request]], list[Any]]
_PROMPT = re.compile(r"question \d+")


def ok_lines(kind: str, text: str = "ok") -> Lines:
    """Every call answered `text`, each result naming its call."""

    def build(requests: list[Request]) -> list[Any]:
        return [result(kind, call_id, text) for call_id, _ in requests]

    return build


def result(kind: str, call_id: Any, text: str) -> dict[str, Any]:
    body = orjson.loads(completion(kind, text))
    if kind == "openai":
        return {"custom_id": call_id, "response": {"status_code": 200, "body": body}}
    if kind == "anthropic":
        return {"custom_id": call_id, "result": {"type": "succeeded", "message": body}}
    return {"response": body, "metadata": {"key": call_id}}


@dataclass
class BatchProvider:
    kind: str
    lines: Lines
    state: str | None = None
    chunks: Callable[[], Iterable[bytes]] | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    status_extra: dict[str, Any] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    polls: int = 0
    created: int = 0
    last: Seen | None = None
    """The request being answered (a `lines` function can echo it)."""

    def __call__(self, seen: Seen) -> Answer:
        self.last = seen
        path = seen.path.split("?")[0]
        if seen.method == "POST" and path.endswith("/files"):
            self.requests = _requests(seen.body, r'"custom_id":"([^"]+)"')
            return _json({"id": "file-in"})
        if seen.method == "POST" and (path.endswith("/batches") or "batchGenerate" in path):
            pattern = r'"key":"([^"]+)"' if self.kind == "gemini" else r'"custom_id":"([^"]+)"'
            self.created += 1
            if self.kind != "openai":
                self.requests = _requests(seen.body, pattern)
            return _json({"id": "batch_1", "name": "batches/b1"})
        if seen.method == "GET" and path.endswith(("/content", "/results")):
            return self._document()
        if seen.method == "GET" and re.search(r"/batches/(batch_1|b1)$", path):
            self.polls += 1
            return self._status()
        return Answer(404, body=b'{"error": {"message": "no such route"}}')

    def _document(self) -> Answer:
        if self.chunks is not None:
            return Answer(headers=self.headers, chunks=self.chunks())
        return Answer(headers=self.headers, body=jsonl(self.lines(self.requests)))

    def _status(self) -> Answer:
        if self.kind == "openai":
            return _json(
                {"id": "batch_1", "status": self.state or "completed", "output_file_id": "file-out"}
            )
        if self.kind == "anthropic":
            return _json({"id": "batch_1", "processing_status": self.state or "ended"})
        op: dict[str, Any] = {
            "name": "batches/b1",
            "metadata": {"state": self.state or "BATCH_STATE_SUCCEEDED", **self.status_extra},
        }
        if self.state is None:
            if self.chunks is not None:
                return Answer(headers=self.headers, chunks=self.chunks())
            records = self.lines(self.requests)
            op["response"] = {"inlinedResponses": {"inlinedResponses": records}}
        return _json(op)


def _requests(body: bytes, id_pattern: str) -> list[Request]:
    """Each request's id and prompt, in order: the ids and prompts alternate in the body."""
    text = body.decode()
    ids = re.findall(id_pattern, text)
    prompts = _PROMPT.findall(text)
    assert len(ids) == len(prompts), (ids, prompts)
    return list(zip(ids, prompts, strict=True))


def jsonl(records: list[Any]) -> bytes:
    return b"".join((r if isinstance(r, bytes) else orjson.dumps(r)) + b"\n" for r in records)


def _json(data: Any) -> Answer:
    return Answer(headers=[("content-type", "application/json")], body=orjson.dumps(data))


KEYS = {"openai": "HOSTILE_PROXY_TOKEN", "anthropic": "HOSTILE_ANTHROPIC_KEY"}


def batch_config(
    tmp_path: Path, base_url: str, kind: str, *, items: int = 3, batch: str = ""
) -> Path:
    """One `kind` model in batch mode on `base_url`, `items` prompts, polled every 10 ms."""
    write_items(tmp_path / "items.jsonl", items)
    url = base_url + ("/v1" if kind == "openai" else "")
    poll = "" if "poll_s" in batch else "poll_s = 0.01\n"
    text = (
        '[run]\nname = "hb"\nruns_dir = "runs"\n\n'
        f'[[models]]\nkey = "m"\nprovider = "{kind}"\nmodel = "hostile-{kind}"\n'
        f'base_url = "{url}"\napi_key_env = "{KEYS.get(kind, "HOSTILE_GEMINI_KEY")}"\n'
        f'mode = "batch"\n[models.batch]\n{poll}{batch}\n'
        "[models.params]\nmax_tokens = 32\n[models.limits]\nmax_attempts = 2\n"
        "backoff_initial_s = 0.01\nbackoff_max_s = 0.05\ntimeout_s = 60\n\n"
        '[[benchmarks]]\nkind = "prompts"\npath = "items.jsonl"\n'
    )
    config = tmp_path / "hb.toml"
    config.write_text(text)
    return config


def run_batch(config: Path, *args: str, command: str = "run") -> Any:
    """`tally COMMAND` on the config (run) or its run directory, as a subprocess."""
    target = config if command == "run" else config.parent / "runs" / "hb"
    return tally(command, str(target), *args, env=CREDENTIAL_ENV, timeout=60)
