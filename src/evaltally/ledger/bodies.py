"""Request and response bodies are stored zlib-compressed.

A CTE prompt carries a whole service source (about 9 KB); storing every attempt's body raw made
a 92,000-call demo write 850 MB and spend most of its time in the disk. zlib at level 1 shrinks
this text several times. `unpack` (or Python's `zlib.decompress`) gives back the exact bytes
whose sha256 is the request hash.

Every blob is one zlib stream (RFC 1950), but how it is made follows the body's size, because
packing runs on the event loop for every attempt:

- under STORE_BELOW_BYTES, the body as one stored (uncompressed) deflate block, framed here:
  deflate would save a few dozen bytes, and inside a running sweep its call measured ~20 us
  against ~1 us alone (zlib releases the GIL on every call; the writer's thread takes it);
- under SMALL_BODY_BYTES, level 1 with a window just large enough to cover the body and a
  smaller hash table: zlib's default state (a 32 KiB window, memLevel 8: about 260 KiB
  allocated and cleared per call) cost ~70 us even for a 100-byte body;
- larger bodies, level 1 with zlib's defaults.

The stream header records the window, so `zlib.decompress` reads all three unchanged.
"""

from __future__ import annotations

import struct
import zlib

COMPRESS_LEVEL = 1
STORE_BELOW_BYTES = 1024
SMALL_BODY_BYTES = 16 * 1024
_SMALL_MEM_LEVEL = 4
_MIN_WBITS = 9  # zlib's smallest window (512 bytes)
# CMF 0x78 (deflate, 32 KiB window), FLG 0x01 (no dictionary, check bits), then a final
# stored block: BFINAL=1, BTYPE=00.
_STORED_HEAD = b"\x78\x01\x01"


def pack(body: bytes) -> bytes:
    size = len(body)
    if size < STORE_BELOW_BYTES:
        return b"".join(
            (
                _STORED_HEAD,
                struct.pack("<HH", size, size ^ 0xFFFF),
                body,
                struct.pack(">I", zlib.adler32(body)),
            )
        )
    if size >= SMALL_BODY_BYTES:
        return zlib.compress(body, COMPRESS_LEVEL)
    wbits = max(_MIN_WBITS, (size - 1).bit_length())
    packer = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, wbits, _SMALL_MEM_LEVEL)
    return packer.compress(body) + packer.flush()


def unpack(blob: bytes) -> bytes:
    """The original body. Raises zlib.error for a blob that is not a packed body."""
    return zlib.decompress(blob)
