"""Block decoders bound their memory by the image they make, not by what they unpack: BC7's bits, indices and
endpoints take about 20 bytes of scratch per pixel it makes (1.4 GB for one 4096² texture), so blocks are decoded
a band at a time straight into the image. Measured as a separate process's peak resident memory."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

from io_ms3d_mdl.formats.source import vtf

MIB = 1 << 20
PEAK = """
import sys
sys.path.insert(0, "tests")
import numpy as np
from peak_memory import peak_bytes
from io_ms3d_mdl.formats.source.vtf import decode
fmt, side, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = np.random.default_rng(1).integers(0, 256, (side // 4) ** 2 * size, dtype=np.uint8).tobytes()
before = peak_bytes()
image = decode(data, fmt, side, side)
after = peak_bytes()
print(after - before, image.nbytes)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="peak memory through the resource module (POSIX)")
@pytest.mark.parametrize("fmt", ["BC7", "DXT5", "BC5", "BC6H_SF16"])
def test_block_decoders_use_about_the_memory_of_the_image(fmt):
    """Random blocks (every mode) of a 2048² texture: the process grows by the image and a bounded band of
    scratch, where decoding all blocks at once grew it by 5 (DXT) to 22 (BC7) times the image."""
    run = subprocess.run(
        [sys.executable, "-c", PEAK, fmt, "2048", str(vtf.BLOCK_BYTES[fmt])],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    grown, image = (int(v) for v in run.stdout.split())
    assert grown < image + 64 * MIB, f"{fmt}: {grown / MIB:.0f} MB for a {image / MIB:.0f} MB image"


@pytest.mark.parametrize("fmt", ["BC7", "DXT1", "DXT5", "BC5", "BC6H_UF16"])
@pytest.mark.parametrize(("width", "height"), [(13, 7), (64, 40), (3, 1)])
def test_bands_give_the_same_image_as_one_pass(monkeypatch, fmt, width, height):
    """Bands of one block row, of a few, and of the whole image, with sizes that are not multiples of 4."""
    blocks = ((width + 3) // 4) * ((height + 3) // 4)
    data = np.random.default_rng(width).integers(0, 256, blocks * vtf.BLOCK_BYTES[fmt], dtype=np.uint8).tobytes()
    whole = vtf.decode(data, fmt, width, height)
    assert whole.shape == (height, width, 4)
    for band in (1, 5, 7):
        monkeypatch.setattr(vtf, "BAND_BLOCKS", band)
        np.testing.assert_array_equal(vtf.decode(data, fmt, width, height), whole)
