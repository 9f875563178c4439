"""Redaction by exact value: a remembered credential is removed in every common encoding, and
ordinary text is left alone."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from urllib.parse import quote

import pytest

from evaltally.adapters.params import PARAM_TYPES, known_params
from evaltally.adapters.presets import ADAPTER_KINDS
from evaltally.adapters.reasoning import REASONING_STYLES
from evaltally.redact import MASK, RedactingStream, Redactor, remember

# A proxy token that looks like no vendor's key (built from parts: not a committed credential).
TOKEN = "proxy" + "-tok-" + "9fQ2xLmZ8pR3tW7y"


@pytest.fixture
def redactor() -> Redactor:
    r = Redactor()
    r.remember(TOKEN)
    return r


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "form",
    [
        TOKEN,
        f"Bearer {TOKEN}",
        TOKEN.upper(),
        quote(TOKEN, safe=""),
        b64(TOKEN),
        b64(f"user:{TOKEN}"),
        b64(f"ab:{TOKEN}:cd"),
        base64.urlsafe_b64encode(f"x{TOKEN}".encode()).decode(),
        f'{{"key": "{TOKEN}"}}',
        f"{TOKEN[:16]}...",
        f"...{TOKEN[-16:]}",
    ],
)
def test_every_common_form_of_a_remembered_key_is_removed(redactor: Redactor, form: str) -> None:
    text = f"provider said: {form} (end)"
    cleaned = redactor.text(text)
    assert MASK in cleaned
    assert TOKEN[4:14] not in cleaned
    assert cleaned.startswith("provider said: ") and cleaned.endswith(" (end)")
    assert redactor.data(text.encode()) == cleaned.encode()


def test_ordinary_text_and_short_values_are_left_alone(redactor: Redactor) -> None:
    redactor.remember("EMPTY")  # a local server's placeholder token: too short to be a secret
    text = "EMPTY answers stay EMPTY; the model said 42"
    assert redactor.text(text) == text
    assert redactor.data(b"\xff\xfe binary") == b"\xff\xfe binary"


def test_overlapping_and_adjacent_matches_leave_one_mask_each(redactor: Redactor) -> None:
    assert redactor.text(TOKEN + TOKEN) == MASK
    assert redactor.text(f"{TOKEN} {TOKEN}") == f"{MASK} {MASK}"


def test_a_redacting_stream_cleans_every_write() -> None:
    remember(TOKEN)  # the process-wide registry, as config.read_api_keys fills it
    sink = io.StringIO()
    stream = RedactingStream(sink)
    stream.write(f"key={TOKEN}\n")
    stream.writelines([f"again {TOKEN}\n"])
    assert sink.getvalue() == f"key={MASK}\nagain {MASK}\n"
    assert stream.isatty() is False


@pytest.mark.parametrize("kind", ADAPTER_KINDS)
@pytest.mark.parametrize("style", REASONING_STYLES)
def test_every_known_param_has_a_type(kind: str, style: str) -> None:
    assert known_params(kind, style) <= set(PARAM_TYPES)


def test_tally_redacts_what_it_prints_including_tracebacks() -> None:
    # An unexpected crash whose message holds a key: `tally`'s entry point wraps stdout and
    # stderr, so even the traceback comes out redacted. `app` is replaced only to crash on cue.
    script = (
        "import evaltally.cli.root as cli\n"
        "from evaltally import redact\n"
        f"redact.remember({TOKEN!r})\n"
        "def crash():\n"
        f"    print('plain print of', {TOKEN!r})\n"
        f"    raise RuntimeError('unexpected, holding ' + {TOKEN!r})\n"
        "cli.app = crash\n"
        "cli.main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "RuntimeError: unexpected, holding [redacted]" in (
        result.stderr
    )
    assert result.stdout == "plain print of [redacted]\n"
    assert TOKEN not in result.stderr
