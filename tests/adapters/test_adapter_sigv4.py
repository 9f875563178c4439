"""SigV4 against AWS's published test-suite vectors (source noted in sigv4_vectors.json)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from evaltally.adapters import sigv4
from evaltally.adapters.base import HttpRequest
from evaltally.errors import CredentialError

SUITE = json.loads((Path(__file__).parent / "sigv4_vectors.json").read_text(encoding="utf-8"))
VECTORS = {v["name"]: v for v in SUITE["vectors"]}
SCOPE = f"{SUITE['amz_date'][:8]}/{SUITE['region']}/{SUITE['service']}/aws4_request"
SUITE_TIME = datetime(2015, 8, 30, 12, 36, 0, tzinfo=UTC)


def _creq(v: dict[str, Any]) -> str:
    return sigv4.canonical_request(v["method"], v["url"], v["headers"], v["body"].encode())


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_canonical_request_string_to_sign_and_signature(name: str) -> None:
    v = VECTORS[name]
    creq = _creq(v)
    if v["creq"] is not None:
        assert creq == v["creq"]
    sts = sigv4.string_to_sign(SUITE["amz_date"], SCOPE, creq)
    assert sts == v["sts"]
    sig = sigv4.signature(SUITE["secret"], SUITE["amz_date"], SUITE["region"], "service", sts)
    assert v["authz"].endswith(f"Signature={sig}")


@pytest.mark.parametrize("name", ["get-vanilla", "post-vanilla", "post-x-www-form-urlencoded"])
def test_sign_produces_the_published_authorization_header(name: str) -> None:
    v = VECTORS[name]
    headers = {k: val for k, val in v["headers"].items() if k != "X-Amz-Date"}
    request = HttpRequest(v["method"], v["url"], v["body"].encode(), headers)
    creds = sigv4.AwsCredentials(SUITE["access_key_id"], SUITE["secret"])
    signed = sigv4.sign(request, creds, region="us-east-1", service="service", now=SUITE_TIME)
    assert signed.headers["authorization"] == v["authz"]
    assert signed.headers["x-amz-date"] == SUITE["amz_date"]
    assert signed.body == request.body


def test_sign_with_session_token_matches_sts_vector() -> None:
    v = VECTORS["post-sts-header-before"]
    token = v["headers"]["X-Amz-Security-Token"]
    request = HttpRequest("POST", v["url"], b"", {"Host": "example.amazonaws.com"})
    creds = sigv4.AwsCredentials(SUITE["access_key_id"], SUITE["secret"], token)
    signed = sigv4.sign(request, creds, region="us-east-1", service="service", now=SUITE_TIME)
    assert signed.headers["x-amz-security-token"] == token
    assert signed.headers["authorization"] == v["authz"]


def test_resigning_replaces_the_signature_and_keeps_the_body() -> None:
    creds = sigv4.AwsCredentials("AKIDEXAMPLE", SUITE["secret"])
    request = HttpRequest("POST", "https://h.example/model/a%3Ab/converse", b'{"x":1}', {})
    first = sigv4.sign(request, creds, region="eu-west-1", service="bedrock", now=SUITE_TIME)
    later = datetime(2015, 8, 30, 12, 46, 0, tzinfo=UTC)
    second = sigv4.sign(first, creds, region="eu-west-1", service="bedrock", now=later)
    assert second.body == first.body == request.body
    assert second.headers["x-amz-date"] == "20150830T124600Z"
    assert second.headers["authorization"] != first.headers["authorization"]
    assert second.headers["authorization"].count("Signature=") == 1
    assert sigv4.signed_scope(second) == ("eu-west-1", "bedrock")


def test_path_already_percent_encoded_is_encoded_again_for_signing() -> None:
    # AWS non-S3 services sign the URI-encoded form of the path as sent.
    assert sigv4.canonical_uri("/model/a%3Ab/converse") == "/model/a%253Ab/converse"


def test_credentials_repr_hides_secrets() -> None:
    creds = sigv4.AwsCredentials("AKIDEXAMPLE", "very-secret", "token-xyz")
    assert "very-secret" not in repr(creds)
    assert "token-xyz" not in repr(creds)


@pytest.mark.parametrize(
    ("env", "missing"),
    [
        ({}, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        ({"AWS_ACCESS_KEY_ID": "AKID"}, "set AWS_SECRET_ACCESS_KEY "),
        ({"AWS_SECRET_ACCESS_KEY": "s3cr3t"}, "set AWS_ACCESS_KEY_ID "),
    ],
)
def test_missing_credential_variable_is_named(env: dict[str, str], missing: str) -> None:
    with pytest.raises(CredentialError) as info:
        sigv4.credentials_from_env(env)
    assert missing in str(info.value)
    assert "s3cr3t" not in str(info.value)


def test_session_token_is_optional() -> None:
    creds = sigv4.credentials_from_env({"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "B"})
    assert creds.session_token is None
