"""AWS Signature Version 4 for one request, written from the published algorithm and checked
against AWS's Signature Version 4 test-suite vectors (tests/adapters/sigv4_vectors.py).

    canonical request = METHOD \\n canonical URI \\n canonical query \\n canonical headers \\n
                        signed header names \\n hex(sha256(body))
    string to sign    = AWS4-HMAC-SHA256 \\n amz-date \\n date/region/service/aws4_request \\n
                        hex(sha256(canonical request))
    signing key       = HMAC chain "AWS4"+secret -> date -> region -> service -> "aws4_request"

The canonical URI encodes each path segment of the URL *as sent* once more, which is what AWS
expects of non-S3 services (a Bedrock model id "a:b" travels as "a%3Ab" and is signed as
"a%253Ab"). Dot-segment normalization is not done: the paths we sign never contain any.

The clock is a parameter: signing is pure, and `sign` can be called again before every attempt
with a fresh time while the body stays byte-identical.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from urllib.parse import quote, unquote, urlsplit

from evaltally import redact
from evaltally.adapters.base import HttpRequest
from evaltally.errors import CredentialError

ALGORITHM = "AWS4-HMAC-SHA256"
SIGNATURE_HEADERS = frozenset({"authorization", "x-amz-date", "x-amz-security-token"})
# Headers a transport may add, drop or rewrite on its own: signing them would break the signature.
UNSIGNED_HEADERS = frozenset({"authorization", "user-agent", "content-length", "expect"})
_UNRESERVED = "-_.~"

ACCESS_KEY_ENV = "AWS_ACCESS_KEY_ID"
SECRET_KEY_ENV = "AWS_SECRET_ACCESS_KEY"
SESSION_TOKEN_ENV = "AWS_SESSION_TOKEN"


@dataclass(frozen=True, slots=True)
class AwsCredentials:
    """An access key pair and optional session token; `repr` shows only the key id."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)


def credentials_from_env(env: Mapping[str, str]) -> AwsCredentials:
    """Credentials from the standard variables; a missing or garbled one is named (its value
    never is). Every value read is remembered for redaction (evaltally.redact)."""
    names = (ACCESS_KEY_ENV, SECRET_KEY_ENV, SESSION_TOKEN_ENV)
    for name in names:
        redact.remember(env.get(name, ""))
    missing = [name for name in names[:2] if not env.get(name)]
    if missing:
        raise CredentialError(
            f"AWS credentials incomplete: set {' and '.join(missing)} "
            f"(and {SESSION_TOKEN_ENV} for temporary credentials)"
        )
    garbled = [name for name in names if not redact.header_safe(env.get(name, ""))]
    if garbled:
        raise CredentialError(
            f"{', '.join(garbled)} hold whitespace or control characters (a trailing \\r?); "
            "values not shown"
        )
    return AwsCredentials(
        access_key_id=env[ACCESS_KEY_ENV],
        secret_access_key=env[SECRET_KEY_ENV],
        session_token=env.get(SESSION_TOKEN_ENV) or None,
    )


def _encode(text: str) -> str:
    return quote(text, safe=_UNRESERVED)


def canonical_uri(path: str) -> str:
    return "/".join(_encode(segment) for segment in (path or "/").split("/"))


def canonical_query(query: str) -> str:
    pairs = []
    for piece in query.split("&"):
        if piece:
            key, _, value = piece.partition("=")
            pairs.append((_encode(unquote(key)), _encode(unquote(value))))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


def canonical_headers(headers: Mapping[str, str]) -> tuple[str, str]:
    """(canonical header block, signed header names) over every header given."""
    normalized = sorted((name.lower(), " ".join(value.split())) for name, value in headers.items())
    block = "".join(f"{name}:{value}\n" for name, value in normalized)
    return block, ";".join(name for name, _ in normalized)


def canonical_request(method: str, url: str, headers: Mapping[str, str], body: bytes) -> str:
    parts = urlsplit(url)
    block, signed = canonical_headers(headers)
    return "\n".join(
        [
            method.upper(),
            canonical_uri(parts.path),
            canonical_query(parts.query),
            block,
            signed,
            hashlib.sha256(body).hexdigest(),
        ]
    )


def string_to_sign(amz_date: str, scope: str, canonical: str) -> str:
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return "\n".join([ALGORITHM, amz_date, scope, digest])


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = ("AWS4" + secret).encode("utf-8")
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key


def signature(secret: str, amz_date: str, region: str, service: str, to_sign: str) -> str:
    key = signing_key(secret, amz_date[:8], region, service)
    return hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def amz_date(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def sign(
    request: HttpRequest,
    credentials: AwsCredentials,
    *,
    region: str,
    service: str,
    now: datetime,
) -> HttpRequest:
    """`request` with fresh x-amz-date, session token and Authorization headers.

    Earlier signature headers are dropped first, so signing a signed request re-signs it. The
    method, URL and body are untouched.
    """
    stamp = amz_date(now)
    headers = {
        k.lower(): v for k, v in request.headers.items() if k.lower() not in SIGNATURE_HEADERS
    }
    headers.setdefault("host", urlsplit(request.url).netloc)
    headers["x-amz-date"] = stamp
    if credentials.session_token:
        headers["x-amz-security-token"] = credentials.session_token
    to_sign = {k: v for k, v in headers.items() if k not in UNSIGNED_HEADERS}
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    canonical = canonical_request(request.method, request.url, to_sign, request.body)
    sig = signature(
        credentials.secret_access_key,
        stamp,
        region,
        service,
        string_to_sign(stamp, scope, canonical),
    )
    _, signed = canonical_headers(to_sign)
    headers["authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key_id}/{scope}, "
        f"SignedHeaders={signed}, Signature={sig}"
    )
    return replace(request, headers=headers)


def signed_scope(request: HttpRequest) -> tuple[str, str] | None:
    """(region, service) from a signed request's Authorization header, for re-signing."""
    auth = request.headers.get("authorization", "")
    for item in auth.removeprefix(ALGORITHM).split(","):
        name, _, value = item.strip().partition("=")
        if name == "Credential":
            fields = value.split("/")
            if len(fields) == 5:
                return fields[2], fields[3]
    return None
