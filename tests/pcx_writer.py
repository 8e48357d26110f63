"""Write PCX test images from the format description (ZSoft's PCX technical reference): a 128-byte header, scanlines
of ``planes`` rows of ``bytes_per_line`` bytes, run-length encoded, and the 256-colour palette after a 0x0C byte.

Runs are cut at 63 (the most six bits count). By default the whole image is one stream, so runs carry on across
scanline ends as many real encoders write them; ``per_line=True`` starts a fresh run at every scanline instead.
"""

from __future__ import annotations

import struct

import numpy as np

MAX_RUN = 63


def even_stride(width: int, bits: int) -> int:
    """Bytes per line as encoders write it: enough for the pixels, rounded up to an even count."""
    stride = (width * bits + 7) // 8
    return stride + stride % 2


def _pad(rows: np.ndarray, stride: int, pad_value: int) -> np.ndarray:
    """(height, planes, n) → (height, planes, stride) with ``pad_value`` after the pixels."""
    out = np.full((*rows.shape[:2], stride), pad_value, np.uint8)
    out[..., : rows.shape[2]] = rows
    return out


def indexed_scanlines(indices: np.ndarray, stride: int | None = None, pad_value: int = 0) -> np.ndarray:
    """8-bit palette indices (height, width) as one plane per scanline."""
    indices = np.asarray(indices, np.uint8)
    return _pad(indices[:, None, :], stride or even_stride(indices.shape[1], 8), pad_value)


def channel_scanlines(pixels: np.ndarray, stride: int | None = None, pad_value: int = 0) -> np.ndarray:
    """(height, width, 3 or 4) colours as a red, a green, a blue (and an alpha) row per scanline."""
    pixels = np.asarray(pixels, np.uint8)
    return _pad(pixels.transpose(0, 2, 1), stride or even_stride(pixels.shape[1], 8), pad_value)


def bit_plane_scanlines(indices: np.ndarray, planes: int) -> np.ndarray:
    """Indices below 2**planes as ``planes`` one-bit rows per scanline (plane 0 holds the lowest bit)."""
    indices = np.asarray(indices, np.uint8)
    bits = (indices[:, None, :] >> np.arange(planes, dtype=np.uint8)[None, :, None]) & 1
    return _pad(np.packbits(bits, axis=2), even_stride(indices.shape[1], 1), 0)


def nibble_scanlines(indices: np.ndarray) -> np.ndarray:
    """Indices below 16 as one 4-bit plane, the left pixel in the high nibble."""
    indices = np.asarray(indices, np.uint8)
    if indices.shape[1] % 2:
        indices = np.pad(indices, ((0, 0), (0, 1)))
    packed = (indices[:, 0::2] << 4) | indices[:, 1::2]
    return _pad(packed[:, None, :], even_stride(indices.shape[1], 4), 0)


def encode_runs(data: np.ndarray, line_bytes: int | None = None) -> bytes:
    """Run-length encode ``data``; with ``line_bytes``, no run crosses a multiple of it (a scanline end)."""
    data = np.asarray(data, np.uint8).ravel()
    if len(data) == 0:
        return b""
    starts = np.flatnonzero(np.r_[True, data[1:] != data[:-1]])
    if line_bytes:
        starts = np.union1d(starts, np.arange(0, len(data), line_bytes))
    lengths = np.diff(np.r_[starts, len(data)])
    values = data[starts]
    pieces = -(-lengths // MAX_RUN)  # each run in chunks of at most 63
    chunk_values = np.repeat(values, pieces)
    chunk_lengths = np.full(len(chunk_values), MAX_RUN)
    last = np.cumsum(pieces) - 1
    chunk_lengths[last] = lengths - (pieces - 1) * MAX_RUN
    literal = (chunk_lengths == 1) & (chunk_values < 0xC0)
    sizes = np.where(literal, 1, 2)
    out = np.empty(int(sizes.sum()), np.uint8)
    at = np.cumsum(sizes) - sizes
    out[at[literal]] = chunk_values[literal]
    run_at = at[~literal]
    out[run_at] = 0xC0 | chunk_lengths[~literal]
    out[run_at + 1] = chunk_values[~literal]
    return out.tobytes()


def write_pcx(
    scanlines: np.ndarray,
    width: int,
    bits: int = 8,
    *,
    version: int = 5,
    encoding: int = 1,
    origin: tuple[int, int] = (0, 0),
    palette16: np.ndarray | None = None,
    palette256: np.ndarray | None = None,
    per_line: bool = False,
) -> bytes:
    """A PCX file of ``scanlines`` (height, planes, bytes per line)."""
    scanlines = np.asarray(scanlines, np.uint8)
    height, planes, stride = scanlines.shape
    x0, y0 = origin
    header = struct.pack(
        "<4B4H2H48sBBHH2H54s",
        0x0A,
        version,
        encoding,
        bits,
        x0,
        y0,
        x0 + width - 1,
        y0 + height - 1,
        72,
        72,
        np.zeros(48, np.uint8).tobytes() if palette16 is None else np.asarray(palette16, np.uint8).tobytes(),
        0,
        planes,
        stride,
        1,
        width,
        height,
        bytes(54),
    )
    assert len(header) == 128
    body = encode_runs(scanlines, planes * stride if per_line else None) if encoding else scanlines.tobytes()
    tail = b"" if palette256 is None else b"\x0c" + np.asarray(palette256, np.uint8).tobytes()
    return header + body + tail
