"""What held last round, kept for batch mode (issue 23): a batch provider that echoes every
credential in every encoding inside its result lines leaves no trace of any in the ledger, the
export or an output (result files are now redacted line by line, as they are read from disk),
and a batch step answered with a redirect to a second server sends that server nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_batch import BatchProvider, Request, batch_config, result, run_batch
from hostile_kit import SECRETS, SENT_CREDENTIALS, echo_of
from hostile_server import Answer, HostileServer, Seen, completion
from secret_scan import scan

KINDS = ["openai", "anthropic", "gemini"]


@pytest.mark.parametrize("kind", KINDS)
def test_batch_lines_echoing_every_credential_leave_no_trace(tmp_path: Path, kind: str) -> None:
    provider: BatchProvider

    def lines(requests: list[Request]) -> list[object]:
        assert provider.last is not None
        echo = echo_of(provider.last)
        return [result(kind, call_id, f"you sent: {echo}") for call_id, _ in requests]

    provider = BatchProvider(kind, lines)
    with HostileServer(provider) as server:
        config = batch_config(tmp_path, server.base_url, kind, items=2)
        outputs = {}
        for command, args in (
            ("run", ()),
            ("status", ()),
            ("export", ("-o", str(tmp_path / "export.jsonl"))),
            ("verify", ()),
            ("report", ()),
        ):
            done = run_batch(config, *args, command=command)
            outputs[f"{command} stdout"], outputs[f"{command} stderr"] = done.stdout, done.stderr
    secret = {"openai": "proxy token", "anthropic": "anthropic key", "gemini": "gemini key"}[kind]
    echoed = " ".join(echo_of(seen) for seen in server.requests)
    assert SECRETS[secret] in echoed
    run_dir = tmp_path / "runs" / "hb"
    assert scan(SECRETS, run_dir=run_dir, export=tmp_path / "export.jsonl", **outputs) == []
    assert "[redacted]" in (tmp_path / "export.jsonl").read_text()


@pytest.mark.parametrize("kind", KINDS)
def test_a_redirected_batch_download_sends_the_other_origin_nothing(
    tmp_path: Path, kind: str
) -> None:
    with HostileServer(lambda seen: Answer(body=completion("openai", "stolen"))) as elsewhere:
        inner = BatchProvider(kind, lambda requests: [])

        def redirecting(seen: Seen) -> Answer:
            answer = inner(seen)
            downloading = seen.path.endswith(("/content", "/results")) or (
                kind == "gemini" and inner.polls > 0 and seen.method == "GET"
            )
            if downloading:
                return Answer(302, headers=[("location", elsewhere.base_url + seen.path)])
            return answer

        with HostileServer(redirecting) as first:
            config = batch_config(tmp_path, first.base_url, kind, items=2)
            done = run_batch(config)
    assert elsewhere.requests == []
    sent = {h for seen in first.requests for h in SENT_CREDENTIALS if h in seen.headers}
    assert sent, "the batch requests carried the credential to the configured origin"
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "http_302" in done.stdout + done.stderr
