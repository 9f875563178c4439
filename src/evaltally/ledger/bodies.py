"""Request and response bodies are stored zlib-compressed.

A CTE prompt carries a whole service source (about 9 KB); storing every attempt's body raw made
a 92,000-call demo write 850 MB and spend most of its time in the disk. zlib at level 1 costs
microseconds per body and shrinks this text several times. `unpack` (or Python's
`zlib.decompress`) gives back the exact bytes whose sha256 is the request hash.
"""

from __future__ import annotations

import zlib

COMPRESS_LEVEL = 1


def pack(body: bytes) -> bytes:
    return zlib.compress(body, COMPRESS_LEVEL)


def unpack(blob: bytes) -> bytes:
    """The original body. Raises zlib.error for a blob that is not a packed body."""
    return zlib.decompress(blob)
