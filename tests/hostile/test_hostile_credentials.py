"""A provider that redirects, echoes credentials or breaks HTTP: no credential leaves its origin,
and none reaches a file or an output (issue 8, items 7, 8 and 10)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_kit import (
    CREDENTIAL_ENV,
    PROXY_TOKEN,
    SECRETS,
    SENT_CREDENTIALS,
    Model,
    echo_of,
    every_provider,
    run_and_inspect,
    write_hostile_config,
)
from hostile_server import Answer, HostileServer, Seen, completion, error_body
from secret_scan import scan

from testkit import tally


@pytest.mark.parametrize("status", [302, 307])
def test_a_redirect_fails_the_call_and_no_credential_reaches_the_other_origin(
    tmp_path: Path, status: int
) -> None:
    with HostileServer(lambda seen: Answer(body=completion(seen.dialect, "stolen"))) as elsewhere:

        def redirect(seen: Seen) -> Answer:
            return Answer(status, headers=[("location", elsewhere.base_url + seen.path)])

        with HostileServer(redirect) as first:
            config = write_hostile_config(tmp_path, first.base_url, every_provider("redirect"))
            result = tally("run", str(config), env=CREDENTIAL_ENV)

    received = [(h, seen.headers[h]) for seen in elsewhere.requests for h in SENT_CREDENTIALS]
    assert received == [], f"credentials sent to {elsewhere.base_url}: {received}"
    assert elsewhere.requests == []
    # Every provider's credential was really sent, to the configured origin only, once.
    sent = {h for seen in first.requests for h in SENT_CREDENTIALS if h in seen.headers}
    assert sent == set(SENT_CREDENTIALS)
    assert len(first.requests) == 4
    assert result.returncode == 3, result.stderr
    assert f"http_{status}" in result.stderr
    assert "redirects are never followed" in result.stderr


def _echo_headers(seen: Seen) -> list[tuple[str, str]]:
    # Request-id headers are stored in the ledger; www-authenticate is printed by some clients.
    values = [v for h, v in seen.headers.items() if h in SENT_CREDENTIALS]
    return [
        *((name, values[0]) for name in ("x-request-id", "request-id", "x-amzn-requestid")),
        *(("www-authenticate", f"Bearer realm={v}") for v in values),
    ]


def echo_everything(seen: Seen) -> Answer:
    """An answer, a 500 or a 401 (by the model the config asked for), each echoing every
    credential the request carried, in its body and its headers."""
    echo, headers = echo_of(seen), _echo_headers(seen)
    if seen.mentions("echo-ok"):
        return Answer(headers=headers, body=completion(seen.dialect, f"you sent: {echo}"))
    status = 500 if seen.mentions("echo-500") else 401
    return Answer(status, headers=headers, body=error_body(f"rejected: {echo}"))


def test_a_provider_echoing_every_credential_leaves_no_trace_of_any(tmp_path: Path) -> None:
    models = every_provider("echo-ok") + every_provider("echo-500") + every_provider("echo-401")
    with HostileServer(echo_everything) as server:
        config = write_hostile_config(tmp_path, server.base_url, models)
        session = run_and_inspect(config)

    echoed = " ".join(echo_of(seen) for seen in server.requests)
    assert all(secret in echoed for name, secret in SECRETS.items() if name != "aws secret key")
    leaks = scan(SECRETS, run_dir=session.run_dir, export=session.export, **session.outputs)
    assert leaks == []
    assert session.run.returncode == 3, session.run.stderr
    rows = session.rows()
    for provider in ("openai", "anthropic", "gemini", "bedrock"):
        assert rows[f"{provider}-echo-ok"]["status"] == "ok"
        assert "[redacted]" in rows[f"{provider}-echo-ok"]["raw_text"]
        assert rows[f"{provider}-echo-500"]["status"] == "failed"
        assert rows[f"{provider}-echo-401"]["status"] == "failed"
    # what was kept is still useful: the provider's words, minus the credentials
    assert "rejected:" in session.run.stderr


def test_a_broken_status_line_carrying_the_key_is_redacted_in_the_transport_error(
    tmp_path: Path,
) -> None:
    line = b"HTTP/1.1 2x0 " + PROXY_TOKEN.encode()
    with HostileServer(lambda seen: Answer(status_line=line)) as server:
        config = write_hostile_config(tmp_path, server.base_url, [Model("m", "openai", "m")])
        session = run_and_inspect(config)

    assert len(server.requests) == 2  # a protocol error is retried, then the call fails
    assert session.rows()["m"]["status"] == "failed"
    assert "Bad status line" in session.run.stderr
    assert "[redacted]" in session.run.stderr
    assert scan(SECRETS, run_dir=session.run_dir, export=session.export, **session.outputs) == []


def test_credentials_in_base_url_are_refused_without_showing_them(tmp_path: Path) -> None:
    password = "pw" + "Hostile0Secret9"
    with HostileServer(lambda seen: Answer(body=completion(seen.dialect, "hi"))) as server:
        url = server.base_url.replace("http://", f"http://user:{password}@")
        config = write_hostile_config(tmp_path, url, [Model("m", "openai", "m")])
        planned = tally("plan", str(config), env=CREDENTIAL_ENV)
        ran = tally("run", str(config), env=CREDENTIAL_ENV)

    assert server.requests == []
    for result in (planned, ran):
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1, result.stderr
        assert "models[0].base_url" in result.stderr and "credentials" in result.stderr
        assert password not in result.stdout + result.stderr
    assert not (tmp_path / "runs" / "hostile").exists()
