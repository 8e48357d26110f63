"""Write 8-bit paletted Windows BMPs: what GoldSrc's ``studiomdl`` reads its textures from (it takes only 8-bit,
uncompressed BMPs). A decompiled texture goes back as the file stores it: the palette and every index unchanged,
so a masked texture's index 255 (transparent) and a chrome texture's palette survive a recompile.

Layout: a 14-byte file header, a 40-byte ``BITMAPINFOHEADER`` (8 bits, no compression, 256 colours used), the
palette as 256 blue-green-red-zero quads, then the rows bottom row first, each padded to four bytes.
"""

from __future__ import annotations

import numpy as np

FILE_HEADER = np.dtype(
    [("magic", "S2"), ("size", "<u4"), ("reserved1", "<u2"), ("reserved2", "<u2"), ("offset", "<u4")]
)
INFO_HEADER = np.dtype(
    [
        ("size", "<u4"),
        ("width", "<i4"),
        ("height", "<i4"),  # positive: the rows are stored bottom row first
        ("planes", "<u2"),
        ("bits", "<u2"),
        ("compression", "<u4"),  # 0: BI_RGB, uncompressed
        ("image_size", "<u4"),
        ("x_pixels_per_metre", "<i4"),
        ("y_pixels_per_metre", "<i4"),
        ("colours_used", "<u4"),
        ("colours_important", "<u4"),
    ]
)
assert FILE_HEADER.itemsize == 14 and INFO_HEADER.itemsize == 40
PALETTE_BYTES = 256 * 4
PIXELS_OFFSET = FILE_HEADER.itemsize + INFO_HEADER.itemsize + PALETTE_BYTES


def paletted_bmp(indices: np.ndarray, palette: np.ndarray) -> bytes:
    """The BMP of ``indices`` ((height, width) uint8, top row first) coloured by ``palette`` ((256, 3) uint8 RGB)."""
    indices = np.asarray(indices)
    palette = np.asarray(palette)
    if indices.ndim != 2 or indices.dtype != np.uint8 or 0 in indices.shape:
        raise ValueError(f"a paletted image needs (height, width) uint8 indices, not {indices.dtype} {indices.shape}")
    if palette.shape != (256, 3) or palette.dtype != np.uint8:
        raise ValueError(f"a palette is (256, 3) uint8, not {palette.dtype} {palette.shape}")
    height, width = indices.shape
    stride = (width + 3) & ~3
    rows = np.zeros((height, stride), dtype=np.uint8)
    rows[:, :width] = indices[::-1]  # bottom row first
    quads = np.zeros((256, 4), dtype=np.uint8)
    quads[:, :3] = palette[:, ::-1]  # blue, green, red, zero
    file_header = np.zeros(1, FILE_HEADER)
    file_header["magic"] = b"BM"
    file_header["size"] = PIXELS_OFFSET + rows.size
    file_header["offset"] = PIXELS_OFFSET
    info = np.zeros(1, INFO_HEADER)
    info["size"] = INFO_HEADER.itemsize
    info["width"] = width
    info["height"] = height
    info["planes"] = 1
    info["bits"] = 8
    info["image_size"] = rows.size
    info["colours_used"] = 256
    return b"".join((file_header.tobytes(), info.tobytes(), quads.tobytes(), rows.tobytes()))
