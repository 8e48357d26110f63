"""The run-length animation values GoldSrc stores and Source kept unchanged (``mstudioanimvalue_t``): one encoder
for both test writers."""

from __future__ import annotations

import struct


def encode_rle(values: list[int]) -> bytes:
    """Runs of at most 255 frames, each storing its values up to a trailing run of repeats (``valid < total``): the
    reader holds a run's last stored value to the run's ``total``."""
    out = bytearray()
    for start in range(0, len(values), 255):
        chunk = values[start : start + 255]
        valid = len(chunk)
        while valid > 1 and chunk[valid - 1] == chunk[valid - 2]:
            valid -= 1
        out += struct.pack("<BB", valid, len(chunk)) + struct.pack(f"<{valid}h", *chunk[:valid])
    return bytes(out)
