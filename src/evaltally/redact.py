"""Credentials never leave the process: the one place that removes them from text and bytes.

Every credential value the tool reads (the variable named by `api_key_env`, the AWS key pair and
session token) is remembered here the moment it is read. Everything the tool stores or prints
passes through `redact`/`redact_bytes` first: response bodies and headers before they reach the
ledger (runner/transport.py), error details and reasons built from them, and the process's
stdout and stderr (`RedactingStream`, installed by `tally`'s entry point), which also covers
tracebacks.

Redaction is by exact value, not only by shape: a vLLM or proxy token looks like any other word.
A value is removed wherever it appears

- as itself, in any letter case (`Bearer <key>`, `key=<key>`, a server that upper-cases it),
- percent-encoded (a key echoed inside a URL), or escaped as JSON,
- inside base64 of any text that contains it (`Basic base64(user:key)`, an echoed token blob):
  the characters of a base64 encoding fully determined by the key's bytes are the same for a
  given offset modulo 3, so three "cores" per alphabet find it whatever surrounds it,
- as its first or last FRAGMENT_CHARS characters (servers that print a clipped key).

`redact_message` also removes strings shaped like a known credential format (vendor key
prefixes, AWS access key ids, bearer tokens, JWTs, `api_key=...` pairs); it is for provider
messages. Other long runs of letters and digits stay readable: a provider's "model
`meta-llama/Llama-3.3-70B-Instruct-Turbo-Free` not found" must show the id the user got wrong,
and a key that has no vendor shape (a proxy's token, a Mistral key) is removed by value anyway.
"""

from __future__ import annotations

import base64
import re
from typing import IO, Any, AnyStr
from urllib.parse import quote, quote_plus

MASK = "[redacted]"

MIN_SECRET_CHARS = 8
"""Shorter values are not remembered: they cannot be told apart from ordinary words (a local
server's "EMPTY" token), and removing them would corrupt answers. No hosted provider issues one."""

FRAGMENT_CHARS = 16
"""A key of at least FRAGMENT_MIN_SECRET characters is also removed where only its first or last
FRAGMENT_CHARS characters appear."""
FRAGMENT_MIN_SECRET = 24

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

_KEY_FORMATS = (
    r"sk-[A-Za-z0-9_\-\*\.]{6,}",  # OpenAI, Anthropic (sk-ant-), DeepSeek, Moonshot, OpenRouter
    r"(?:AKIA|ASIA)[0-9A-Z]{12,}",  # AWS access key ids
    r"AIza[0-9A-Za-z_\-]{20,}",  # Google API keys
    r"ya29\.[0-9A-Za-z_\-\.]{10,}",  # Google OAuth access tokens
    r"(?:gsk|hf|xai|pplx|fw|r8|tgp_v1|nvapi|ghp|gho|ghs|github_pat)[_\-][0-9A-Za-z_\-]{16,}",
    r"eyJ[0-9A-Za-z_\-]{4,}\.[0-9A-Za-z_\-]{4,}\.[0-9A-Za-z_\-]*",  # JWTs
    r"(?i:bearer|basic)\s+[0-9A-Za-z_\-\.~\+/=]{16,}",  # an echoed Authorization header
    # the value of a key-like name: api_key=..., "token": "...", x-api-key: ...
    r"(?i:api[_\-]?key|access[_\-]?key|secret|token|password)[\"']?\s*[:=]\s*[\"']?"
    r"[^\s\"',;]{12,}",
)
# Things shaped like credentials, and nothing else: an id or hash must stay readable.
# A format starts a word: "task-specific" holds no "sk-" key.
_KEY_SHAPED = re.compile("(?<![0-9A-Za-z])(?:" + "|".join(_KEY_FORMATS) + ")")


class Redactor:
    """A set of secret values and the forms they are searched for in."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._folded: set[str] = set()  # matched in any ASCII letter case
        self._exact: set[str] = set()  # matched as is (base64 is case-sensitive)
        self._folded_b: set[bytes] = set()
        self._exact_b: set[bytes] = set()

    def remember(self, secret: str) -> None:
        """Remove `secret` from everything redacted from now on."""
        if len(secret) < MIN_SECRET_CHARS or secret in self._secrets:
            return
        self._secrets.add(secret)
        folded = {secret, quote(secret, safe=""), quote_plus(secret, safe="")}
        folded.add(_json_escaped(secret))
        if len(secret) >= FRAGMENT_MIN_SECRET:
            folded |= {secret[:FRAGMENT_CHARS], secret[-FRAGMENT_CHARS:]}
        self._folded |= {f.translate(_ASCII_LOWER) for f in folded}
        self._exact |= _base64_cores(secret.encode("utf-8"))
        self._folded_b = {f.encode("utf-8") for f in self._folded}
        self._exact_b = {e.encode("ascii") for e in self._exact}

    def text(self, text: str) -> str:
        if not self._secrets or not text:
            return text
        spans = _find(text.translate(_ASCII_LOWER), self._folded)
        spans += _find(text, self._exact)
        return _mask(text, spans, MASK)

    def data(self, data: bytes) -> bytes:
        if not self._secrets or not data:
            return data
        spans = _find(data.lower(), self._folded_b)
        spans += _find(data, self._exact_b)
        return _mask(data, spans, MASK.encode())


def _json_escaped(secret: str) -> str:
    return secret.replace("\\", "\\\\").replace('"', '\\"').replace("/", "\\/")


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 characters determined by `raw` alone, for each of the three offsets `raw` can
    start at inside a longer text, in the standard and the URL-safe alphabet."""
    cores: set[str] = set()
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + raw).decode("ascii")
        first_group = -(-offset // 3)  # first 3-byte group that starts inside `raw`
        end_group = (offset + len(raw)) // 3  # groups before this one end inside `raw`
        core = encoded[first_group * 4 : end_group * 4]
        if len(core) >= MIN_SECRET_CHARS:
            cores |= {core, core.replace("+", "-").replace("/", "_")}
    return cores


def _find(haystack: AnyStr, needles: set[AnyStr]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for needle in needles:
        start = haystack.find(needle)
        while start >= 0:
            spans.append((start, start + len(needle)))
            start = haystack.find(needle, start + 1)
    return spans


def _mask(value: AnyStr, spans: list[tuple[int, int]], mask: AnyStr) -> AnyStr:
    if not spans:
        return value
    parts: list[AnyStr] = []
    pos = 0
    for start, end in sorted(spans):
        if end <= pos:
            continue
        if start > pos:
            parts.append(value[pos:start])
            parts.append(mask)
        elif not parts:
            parts.append(mask)
        pos = end
    parts.append(value[pos:])
    return value[:0].join(parts)


_REGISTRY = Redactor()


def remember(secret: str) -> None:
    """Remember a credential value the moment it is read (config.read_api_keys, sigv4)."""
    _REGISTRY.remember(secret)


def redact(text: str) -> str:
    """`text` with every remembered credential, in every form above, replaced by MASK."""
    return _REGISTRY.text(text)


def redact_bytes(data: bytes) -> bytes:
    """`data` with every remembered credential replaced by MASK (bodies, before storing)."""
    return _REGISTRY.data(data)


def header_safe(value: str) -> bool:
    """Whether a credential can travel in an HTTP header as it is: visible ASCII only. A value
    with a trailing \\r (a file saved on Windows) or a space is refused, naming its variable."""
    return all("!" <= ch <= "~" for ch in value)


def redact_message(text: str) -> str:
    """`redact`, and anything shaped like an API key or token replaced too (provider messages)."""
    return _KEY_SHAPED.sub(MASK, redact(text))


class RedactingStream:
    """A text stream whose every write is redacted first (the process's stdout and stderr)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
