"""Packed bodies are zlib streams whatever their size: `zlib.decompress` gives back the exact
bytes (docs/ledger.md, "Bodies are compressed"), stored below 1 KiB, deflated above."""

from __future__ import annotations

import random
import zlib

import pytest

from evaltally.ledger import unpack_body
from evaltally.ledger.bodies import SMALL_BODY_BYTES, STORE_BELOW_BYTES, pack


def _text(n: int, seed: int) -> bytes:
    """JSON-like text with repeats (compressible) and random bytes (not)."""
    rng = random.Random(seed)
    words = [b'"role": "user"', b'"content": ', b"question ", rng.randbytes(7), b"\n"]
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words)
    return bytes(out[:n])


SIZES = (0, 1, 2, 100, 511, 512, 513, STORE_BELOW_BYTES - 1, STORE_BELOW_BYTES)
SIZES += (STORE_BELOW_BYTES + 1, 9000, SMALL_BODY_BYTES - 1, SMALL_BODY_BYTES, 200_000)


@pytest.mark.parametrize("size", SIZES)
def test_every_size_round_trips_through_plain_zlib(size: int) -> None:
    body = _text(size, size)
    blob = pack(body)
    assert zlib.decompress(blob) == body
    assert unpack_body(blob) == body
    stream = zlib.decompressobj()
    assert stream.decompress(blob) == body and stream.eof and stream.unused_data == b""


def test_small_bodies_are_stored_larger_ones_deflated() -> None:
    small = _text(STORE_BELOW_BYTES - 1, 1)
    assert len(pack(small)) == len(small) + 11  # zlib header, block header, adler32
    for size in (STORE_BELOW_BYTES, 9000, 200_000):
        body = _text(size, 2)
        assert len(pack(body)) < len(body) * 0.8


def test_a_damaged_stored_blob_is_refused() -> None:
    blob = bytearray(pack(b"the answer is 42"))
    blob[-6] ^= 1  # a body byte: the adler32 check no longer matches
    with pytest.raises(zlib.error):
        unpack_body(bytes(blob))
