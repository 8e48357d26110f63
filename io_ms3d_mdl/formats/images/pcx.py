"""ZSoft PCX images (versions 0–5), the skins of Quake/MD2-era models that MilkShape imported: decoded to RGBA8
with vectorised numpy (no Python loop per byte), because Blender has no PCX reader.

Layout: a 128-byte header, then run-length-encoded scanlines, top row first. Each scanline holds ``planes`` rows
of ``bytes_per_line`` bytes (padded, usually to an even count) one after the other. A byte with both top bits set
is a run: its low six bits count how often the next byte repeats; any other byte stands for itself. Many encoders
let a run carry on into the next scanline, so the stream is decoded as a whole and cut into rows afterwards.
Colours: 8 bits × 1 plane index the 256-colour palette stored after a 0x0C byte at the end of the file (grey
when there is none); 8 × 3 (× 4) planes are red, green, blue (and alpha) rows; 1 bit × 1 plane is black and
white; 1 bit × 2–4 planes and 4 bits × 1 plane index the 16-colour palette in the header (the fixed EGA one for
versions 0 and 3, which carry none).
"""

from __future__ import annotations

import os

import numpy as np

from ...access import read_file
from ...budget import OPTION, current_budget
from ...errors import FormatError
from ..binary import Cursor

HEADER = np.dtype(
    [
        ("manufacturer", "u1"),  # always 0x0A
        ("version", "u1"),  # 0, 2, 3, 4 or 5
        ("encoding", "u1"),  # 1: run-length encoded (0: stored, rare)
        ("bits", "u1"),  # bits per pixel in each plane
        ("window", "<u2", 4),  # xmin, ymin, xmax, ymax (inclusive)
        ("dpi", "<u2", 2),
        ("palette16", "u1", (16, 3)),
        ("reserved", "u1"),
        ("planes", "u1"),
        ("bytes_per_line", "<u2"),  # of one plane of one scanline
        ("palette_info", "<u2"),
        ("screen", "<u2", 2),
        ("filler", "u1", 54),
    ]
)
assert HEADER.itemsize == 128
MANUFACTURER = 0x0A
VERSIONS = (0, 2, 3, 4, 5)
PALETTE_MARKER = 0x0C  # the byte before the 768-byte palette of an 8-bit image
PALETTE_BYTES = 769
RUN_FLAG = 0xC0
LOOKUP_BAND = 1 << 20  # pixels looked up in the palette at a time
CHUNK = 1 << 14  # stream bytes run-length decoded at a time (at most 63 decoded bytes each)
# (bits, planes) this decoder reads; 2-bit CGA images (with their own palette rules) and 16/24-bit single-plane
# variants are not decoded.
LAYOUTS = {(1, 1), (1, 2), (1, 3), (1, 4), (4, 1), (8, 1), (8, 3), (8, 4)}
# The 16 colours of an EGA card: what versions 0 and 3 (no palette in the header) are drawn with.
EGA = np.array(
    [
        [0, 0, 0], [0, 0, 170], [0, 170, 0], [0, 170, 170], [170, 0, 0], [170, 0, 170], [170, 85, 0],
        [170, 170, 170], [85, 85, 85], [85, 85, 255], [85, 255, 85], [85, 255, 255], [255, 85, 85],
        [255, 85, 255], [255, 255, 85], [255, 255, 255],
    ],
    np.uint8,
)  # fmt: skip


class TextureTooLarge(FormatError):
    """A PCX whose declared size is beyond the pixel budget: refused from its header, before anything is
    allocated, and reported (the import goes on with a placeholder), as an over-budget VTF is."""


def read_pcx(path: str | os.PathLike[str], max_pixels: int | None = None) -> np.ndarray:
    """The image of a PCX file as (height, width, 4) uint8 RGBA, top row first."""
    return decode_pcx(read_file(path), os.fspath(path), max_pixels)


def decode_pcx(data: bytes, path: str | None = None, max_pixels: int | None = None) -> np.ndarray:
    """Decode PCX bytes; ``max_pixels`` (default: the budget's texture size) bounds width × height, and the decoded
    scanlines are bounded by the same budget, so a small file cannot ask for gigabytes."""
    cur = Cursor(data, path)
    if cur.size < HEADER.itemsize:
        raise cur.error(f"not a PCX image: the 128-byte header ends after {cur.size} bytes", cur.size)
    header = cur.array_at(HEADER, 0, 1, "PCX header")[0]
    if int(header["manufacturer"]) != MANUFACTURER:
        raise cur.error(f"not a PCX image: expected the identifier 0x0A, found 0x{int(header['manufacturer']):02X}", 0)
    version, encoding = int(header["version"]), int(header["encoding"])
    if version not in VERSIONS:
        raise cur.error(f"unknown PCX version {version} (0, 2, 3, 4 and 5 exist)", 1)
    if encoding not in (0, 1):
        raise cur.error(f"unknown PCX encoding {encoding} (1 is run-length, 0 stored)", 2)
    xmin, ymin, xmax, ymax = (int(v) for v in header["window"])
    if xmax < xmin or ymax < ymin:
        raise cur.error(f"empty image window {xmin},{ymin} to {xmax},{ymax}", 4)
    width, height = xmax - xmin + 1, ymax - ymin + 1
    budget = current_budget()
    limit = budget.texture_pixels if max_pixels is None else max_pixels
    if width * height > limit:
        raise TextureTooLarge(
            path, 4, f"{width}×{height} pixels are beyond the work budget of {limit:,} pixels; {OPTION}"
        )
    bits, planes, stride = int(header["bits"]), int(header["planes"]), int(header["bytes_per_line"])
    if (bits, planes) not in LAYOUTS:
        raise cur.error(f"{bits} bit(s) per pixel in {planes} plane(s) is not a PCX layout this reader decodes", 3)
    if stride < (width * bits + 7) // 8:
        raise cur.error(f"{stride} bytes per line cannot hold {width} pixels of {bits} bit(s)", 66)
    needed = height * planes * stride
    byte_limit = 4 * budget.texture_pixels
    if needed > byte_limit:
        raise TextureTooLarge(
            path, 66, f"{needed:,} bytes of scanlines are beyond the work budget of {byte_limit:,} bytes; {OPTION}"
        )

    end = cur.size
    palette = None
    has_palette = cur.size >= HEADER.itemsize + PALETTE_BYTES and cur.data[-PALETTE_BYTES] == PALETTE_MARKER
    if (bits, planes) == (8, 1) and has_palette:
        end = cur.size - PALETTE_BYTES
        palette = np.frombuffer(cur.data, np.uint8, 768, end + 1).reshape(256, 3)
    stream = np.frombuffer(cur.data, np.uint8, end - HEADER.itemsize, HEADER.itemsize)
    keep = (width * bits + 7) // 8  # the bytes of a plane's row that hold pixels; the rest is padding
    if encoding == 1:
        pixels, decoded = _unpack_runs(stream, needed, stride, keep)
    else:
        decoded = min(len(stream), needed)
        pixels = stream[:decoded].reshape(-1, stride)[:, :keep] if decoded == needed else stream
    if decoded < needed:
        row = decoded // (planes * stride)
        raise cur.error(
            f"the image data ends after {decoded:,} of {needed:,} bytes (in scanline {row} of {height})", end
        )
    rows = pixels.reshape(height, planes, keep)
    return _to_rgba(rows, bits, planes, width, version, header["palette16"], palette)


def _unpack_runs(stream: np.ndarray, needed: int, stride: int, keep: int) -> tuple[np.ndarray, int]:
    """Run-length decoding, stopped after ``needed`` bytes, keeping only the first ``keep`` bytes of every
    ``stride`` (the padding of each line is dropped as it is decoded). Returns the kept bytes and how many bytes
    were decoded. The stream is worked through CHUNK bytes at a time, so memory is bounded by the image the file
    makes, never by its runs or its padding.

    Which bytes are run counts depends on what came before: in a stretch of bytes ≥ 0xC0 that follows a byte
    below it (or the start), the 1st, 3rd, 5th… are counts and the others their repeated values, and a byte below
    0xC0 is the value of a count just before it, else a literal. A chunk's last byte may be a count whose value
    opens the next chunk; that count is carried over."""
    out = np.empty(needed // stride * keep, np.uint8)
    produced = 0
    pending = 0  # a count that ended the previous chunk: the next byte is its value, whatever it is
    at = 0
    while at < len(stream) and produced < needed:
        chunk = stream[at : at + CHUNK]
        at += len(chunk)
        if pending:
            produced = _store(out, np.full(min(pending, needed - produced), chunk[0], np.uint8), produced, stride, keep)
            chunk, pending = chunk[1:], 0
            if not len(chunk):
                continue
        times, pending = _run_lengths(chunk)
        room = needed - produced
        if int(times.sum(dtype=np.int64)) > room:  # runs beyond the image: stop at its last byte
            last = int(np.searchsorted(np.cumsum(times, dtype=np.int64), room))
            chunk, times, pending = chunk[: last + 1], times[: last + 1], 0
        produced = _store(out, np.repeat(chunk, times)[:room], produced, stride, keep)
    return out, produced


def _run_lengths(chunk: np.ndarray) -> tuple[np.ndarray, int]:
    """How often each byte of a chunk that starts on a fresh token is written: once for a literal, its count for
    a run's value, never for a count; and the count of a run whose value is past the chunk's end (else 0).

    Counts are found from each byte's distance to the last byte below 0xC0 (odd: a count)."""
    n = len(chunk)
    index = np.arange(n, dtype=np.int32)
    high = chunk >= RUN_FLAG
    last_low = np.maximum.accumulate(np.where(high, -1, index))
    count_byte = high & ((index - last_low) & 1).astype(bool)
    times = (~count_byte).view(np.uint8)
    times[1:] = np.where(count_byte[:-1], chunk[:-1] & 0x3F, times[1:])
    pending = int(chunk[-1]) & 0x3F if count_byte[-1] else 0
    return times, pending


def _store(out: np.ndarray, piece: np.ndarray, produced: int, stride: int, keep: int) -> int:
    """Put decoded bytes that start at stream position ``produced`` into ``out`` (lines of ``keep`` bytes),
    dropping what falls into each line's padding; returns the position after them. Three slice copies (the rest
    of the current line, whole lines, the start of the last one), never an index per byte."""
    n, done = len(piece), 0
    line, column = divmod(produced, stride)
    if column:
        take = min(stride - column, n)
        if column < keep:
            upto = min(column + take, keep)
            out[line * keep + column : line * keep + upto] = piece[: upto - column]
        done, line = take, line + 1
    whole = (n - done) // stride
    if whole:
        lines = piece[done : done + whole * stride].reshape(whole, stride)[:, :keep]
        out[line * keep : (line + whole) * keep].reshape(whole, keep)[:] = lines
        done, line = done + whole * stride, line + whole
    if done < n:
        upto = min(n - done, keep)
        out[line * keep : line * keep + upto] = piece[done : done + upto]
    return produced + n


def _to_rgba(
    rows: np.ndarray,
    bits: int,
    planes: int,
    width: int,
    version: int,
    palette16: np.ndarray,
    palette256: np.ndarray | None,
) -> np.ndarray:
    """(height, planes, bytes of pixels per line) scanlines, their padding gone, to (height, width, 4) RGBA."""
    height = rows.shape[0]
    out = np.empty((height, width, 4), np.uint8)
    if bits == 8 and planes >= 3:
        out[..., :planes] = rows[:, :planes, :width].transpose(0, 2, 1)
        if planes == 3:
            out[..., 3] = 255
        return out
    if bits == 8:
        indices = rows[:, 0, :width]
        colours = palette256 if palette256 is not None else np.repeat(np.arange(256, dtype=np.uint8)[:, None], 3, 1)
    elif bits == 4:
        nibbles = np.stack([rows[:, 0] >> 4, rows[:, 0] & 0x0F], axis=-1).reshape(height, -1)
        indices = nibbles[:, :width]
        colours = _palette16(version, palette16)
    else:
        # one plane at a time (plane 0 is the lowest bit), from rows whose padding is already gone: a byte per
        # pixel at most, however many planes
        indices = np.unpackbits(rows[:, 0], axis=1, count=width)
        for plane in range(1, planes):
            indices |= np.unpackbits(rows[:, plane], axis=1, count=width) << plane
        colours = np.array([[0, 0, 0], [255, 255, 255]], np.uint8) if planes == 1 else _palette16(version, palette16)
    table = np.full((len(colours), 4), 255, np.uint8)
    table[:, :3] = colours
    # one 32-bit word per pixel: a lookup of whole pixels is several times faster than of (n, 4) rows; in bands of
    # rows, since np.take widens its indices to 64 bits (twice the size of the image itself at once)
    words, lookup = out.view(np.uint32)[..., 0], table.view(np.uint32)[:, 0]
    band = max(1, LOOKUP_BAND // width)
    for top in range(0, height, band):
        np.take(lookup, indices[top : top + band], out=words[top : top + band], mode="clip")
    return out


def _palette16(version: int, palette16: np.ndarray) -> np.ndarray:
    """Versions 0 and 3 carry no palette in the header: the screen's EGA colours apply."""
    return EGA if version in (0, 3) else np.asarray(palette16, np.uint8)
