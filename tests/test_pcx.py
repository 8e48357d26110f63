"""PCX skins (MD2-era MilkShape models): the numpy decoder against written fixtures and against Pillow on real
files, hostile input, budgets, and the MilkShape import that gives such a texture its pixels."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from conftest import samples_dir
from ms3d_writer import Group, Material, quad_spec, write_ms3d
from pcx_writer import (
    bit_plane_scanlines,
    channel_scanlines,
    encode_runs,
    even_stride,
    indexed_scanlines,
    nibble_scanlines,
    write_pcx,
)

from io_ms3d_mdl.budget import Budget, using_budget
from io_ms3d_mdl.errors import BudgetExceeded, FormatError
from io_ms3d_mdl.formats.images import TextureTooLarge, decode_pcx, pcx, read_pcx
from io_ms3d_mdl.formats.images.pcx import EGA
from io_ms3d_mdl.scene.load import load_ms3d
from io_ms3d_mdl.scene.ms3d.convert import Ms3dOptions

Image = pytest.importorskip("PIL.Image")  # the independent decoder (a dev dependency)

RNG = np.random.default_rng(7)
PALETTE = RNG.integers(0, 256, (256, 3), dtype=np.uint8)
PALETTE16 = RNG.integers(0, 256, (16, 3), dtype=np.uint8)
MIB = 1 << 20


def coverage_dir():
    return samples_dir() / "coverage" / "ms3d" / "akadjoker__IrrlichtGameObject"


def real_pcx() -> list:
    folder = coverage_dir()
    return [folder / "new skin.pcx", folder / "morbo" / "MORBO.pcx"]


def rgba(colours: np.ndarray, alpha: int = 255) -> np.ndarray:
    return np.concatenate([colours, np.full((*colours.shape[:-1], 1), alpha, np.uint8)], axis=-1)


def pillow_rgba(source) -> np.ndarray:
    with Image.open(source) as image:
        return np.asarray(image.convert("RGBA"))


def pillow_rgba_bytes(data: bytes) -> np.ndarray:
    return pillow_rgba(io.BytesIO(data))


def patchy(height: int, width: int, levels: int = 256) -> np.ndarray:
    """Indices with long runs (many cross scanline ends) and noise between them."""
    out = np.repeat(RNG.integers(0, levels, (height * width) // 50 + 1), 50)[: height * width]
    noise = RNG.random(height * width) < 0.3
    out[noise] = RNG.integers(0, levels, int(noise.sum()))
    return out.reshape(height, width).astype(np.uint8)


# --- round trips of written fixtures --------------------------------------------------------------------------


@pytest.mark.parametrize("per_line", [False, True])
def test_8bit_paletted_round_trip(per_line):
    indices = patchy(40, 64)
    data = write_pcx(indexed_scanlines(indices), 64, palette256=PALETTE, per_line=per_line)
    got = decode_pcx(data, "skin.pcx")
    assert got.shape == (40, 64, 4) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, rgba(PALETTE[indices]))
    if per_line:  # Pillow refuses runs that cross a scanline end ("buffer overrun")
        np.testing.assert_array_equal(got, pillow_rgba_bytes(data))


def test_24bit_three_planes_round_trip():
    pixels = np.stack([patchy(33, 48), patchy(33, 48), patchy(33, 48)], axis=-1)
    data = write_pcx(channel_scanlines(pixels), 48, per_line=True)
    got = decode_pcx(data)
    np.testing.assert_array_equal(got, rgba(pixels))
    np.testing.assert_array_equal(got, pillow_rgba_bytes(data))


def test_32bit_four_planes_keep_alpha():
    pixels = np.stack([patchy(9, 20) for _ in range(4)], axis=-1)
    np.testing.assert_array_equal(decode_pcx(write_pcx(channel_scanlines(pixels), 20)), pixels)


@pytest.mark.parametrize("width", [1, 37, 63, 255])
def test_odd_widths_drop_the_padding_of_each_line(width):
    """Bytes per line is even (one pad byte on odd widths) or more; the pad bytes, not zero here, never show."""
    indices = patchy(7, width)
    stride = even_stride(width, 8) + (4 if width == 63 else 0)
    data = write_pcx(indexed_scanlines(indices, stride, pad_value=0xEE), width, palette256=PALETTE)
    np.testing.assert_array_equal(decode_pcx(data), rgba(PALETTE[indices]))
    pixels = np.stack([indices, indices[::-1], 255 - indices], axis=-1)
    data = write_pcx(channel_scanlines(pixels, stride, pad_value=0xC5), width, per_line=True)
    np.testing.assert_array_equal(decode_pcx(data), rgba(pixels))
    # Pillow assumes the even stride whatever the header says, and reads a one-pixel-wide RGB image's pad byte
    # as green: compare with it where neither matters.
    if width > 1 and stride == even_stride(width, 8):
        np.testing.assert_array_equal(decode_pcx(data), pillow_rgba_bytes(data))


def test_runs_crossing_scanline_ends_and_planes():
    """One grey over the whole image: every run but the last is 63 long and most cross a line (or plane) end."""
    pixels = np.full((10, 21, 3), 0xC7, np.uint8)
    scanlines = channel_scanlines(pixels, pad_value=0xC7)  # pad matching the run, as such encoders write it
    stream = encode_runs(scanlines)
    assert stream == b"\xff\xc7" * 10 + b"\xde\xc7"  # 660 bytes: ten runs of 63 and one of 30
    data = write_pcx(scanlines, 21)
    np.testing.assert_array_equal(decode_pcx(data), rgba(pixels))


@pytest.mark.parametrize("length", [62, 63, 64, 126, 127, 200])
def test_runs_of_length_63_and_around(length):
    row = np.full(length, 0x41, np.uint8)
    stream = encode_runs(row)
    assert stream[0] == 0xC0 | min(length, 63)
    indices = np.concatenate([row, np.array([0xC0, 0xFF, 0x00], np.uint8)])[None, :]  # then literal ≥ 0xC0
    data = write_pcx(indexed_scanlines(indices), indices.shape[1], palette256=PALETTE)
    np.testing.assert_array_equal(decode_pcx(data), rgba(PALETTE[indices]))


def test_image_window_need_not_start_at_zero():
    indices = patchy(12, 30)
    data = write_pcx(indexed_scanlines(indices), 30, origin=(100, 7), palette256=PALETTE, per_line=True)
    assert decode_pcx(data).shape == (12, 30, 4)
    np.testing.assert_array_equal(decode_pcx(data), pillow_rgba_bytes(data))


def test_8bit_without_palette_is_grey():
    indices = patchy(5, 16)
    got = decode_pcx(write_pcx(indexed_scanlines(indices), 16))
    np.testing.assert_array_equal(got, rgba(np.repeat(indices[..., None], 3, -1)))


def test_stored_without_runs():
    indices = patchy(6, 10)
    data = write_pcx(indexed_scanlines(indices), 10, encoding=0, palette256=PALETTE)
    np.testing.assert_array_equal(decode_pcx(data), rgba(PALETTE[indices]))


def test_one_bit_black_and_white():
    indices = (patchy(11, 29, 2)).astype(np.uint8)
    data = write_pcx(bit_plane_scanlines(indices, 1), 29, bits=1, version=2, per_line=True)
    got = decode_pcx(data)
    np.testing.assert_array_equal(got, rgba(np.repeat(indices[..., None] * 255, 3, -1)))
    np.testing.assert_array_equal(got, pillow_rgba_bytes(data))


@pytest.mark.parametrize("planes", [2, 4])
def test_ega_bit_planes_use_the_header_palette(planes):
    indices = patchy(13, 35, 1 << planes)
    data = write_pcx(bit_plane_scanlines(indices, planes), 35, bits=1, palette16=PALETTE16, version=2, per_line=True)
    got = decode_pcx(data)
    np.testing.assert_array_equal(got, rgba(PALETTE16[indices]))
    np.testing.assert_array_equal(got, pillow_rgba_bytes(data))


def test_version_3_has_no_palette_and_uses_the_ega_colours():
    indices = patchy(4, 17, 16)
    data = write_pcx(bit_plane_scanlines(indices, 4), 17, bits=1, palette16=PALETTE16, version=3)
    np.testing.assert_array_equal(decode_pcx(data), rgba(EGA[indices]))


def test_four_bit_single_plane():
    indices = patchy(6, 15, 16)
    data = write_pcx(nibble_scanlines(indices), 15, bits=4, palette16=PALETTE16)
    np.testing.assert_array_equal(decode_pcx(data), rgba(PALETTE16[indices]))


# --- real files ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", [0, 1])
def test_real_skins_agree_with_pillow(index):
    path = real_pcx()[index]
    got = read_pcx(path)
    assert got.shape == (256, 256, 4)
    np.testing.assert_array_equal(got, pillow_rgba(path))
    assert len(np.unique(got.reshape(-1, 4), axis=0)) > 50  # a real picture, not a flat placeholder


# --- hostile input ---------------------------------------------------------------------------------------------


def test_truncated_real_file_names_file_and_offset():
    data = real_pcx()[0].read_bytes()
    for cut in (0, 100, 128, 129, 5000, len(data) // 2, len(data) - 800):
        with pytest.raises(FormatError) as caught:
            decode_pcx(data[:cut], "new skin.pcx")
        assert "new skin.pcx" in str(caught.value) and caught.value.offset is not None
        assert caught.value.offset <= max(cut, 4)


def header_with(**fields) -> bytearray:
    data = bytearray(write_pcx(indexed_scanlines(patchy(4, 8)), 8, palette256=PALETTE))
    offsets = {"manufacturer": (0, "B"), "version": (1, "B"), "encoding": (2, "B"), "bits": (3, "B")}
    offsets |= {"xmax": (8, "H"), "ymax": (10, "H"), "planes": (65, "B"), "stride": (66, "H")}
    for name, value in fields.items():
        at, fmt = offsets[name]
        struct.pack_into("<" + fmt, data, at, value)
    return data


@pytest.mark.parametrize(
    "fields, offset, words",
    [
        ({"manufacturer": 0x0B}, 0, "not a PCX"),
        ({"version": 7}, 1, "version 7"),
        ({"encoding": 9}, 2, "encoding 9"),
        ({"bits": 2}, 3, "2 bit(s)"),
        ({"planes": 2}, 3, "2 plane(s)"),
        ({"stride": 3}, 66, "3 bytes per line"),
        ({"xmax": 0xFFFF, "ymax": 0}, 66, "cannot hold 65536 pixels"),  # wider than the lines hold
    ],
)
def test_malformed_headers_are_format_errors(fields, offset, words):
    data = header_with(**fields)
    with pytest.raises(FormatError) as caught:
        decode_pcx(bytes(data), "bad.pcx")
    assert words in caught.value.reason and caught.value.offset == offset and "bad.pcx" in str(caught.value)


def test_an_empty_window_is_refused():
    data = bytearray(header_with())
    data[4:6] = (50).to_bytes(2, "little")  # xmin beyond xmax
    with pytest.raises(FormatError, match="empty image window"):
        decode_pcx(bytes(data))


def test_a_final_run_count_without_its_value():
    indices = np.full((1, 8), 7, np.uint8)
    data = write_pcx(indexed_scanlines(indices), 8)
    with pytest.raises(FormatError, match="ends after 0 of 8"):
        decode_pcx(data[:128] + b"\xc8")


def test_runs_far_beyond_the_image_are_not_expanded():
    """Half a megabyte of 63-byte runs for a 64×64 image: decoding stops at the image's last byte."""
    header = write_pcx(indexed_scanlines(np.zeros((64, 64), np.uint8)), 64)[:128]
    data = header + b"\xff\x05" * 250_000
    tracemalloc.start()
    try:
        image = decode_pcx(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # all runs expanded would be 15 MB
    np.testing.assert_array_equal(image, np.full((64, 64, 4), (5, 5, 5, 255), np.uint8))


def test_mutated_real_files_decode_or_fail_cleanly():
    """Random byte changes anywhere: a picture of the declared size, or a FormatError; never anything else."""
    base = real_pcx()[1].read_bytes()
    rng = np.random.default_rng(11)
    outcomes = set()
    for _ in range(300):
        data = bytearray(base)
        for at in rng.integers(0, len(data), rng.integers(1, 8)):
            data[at] = int(rng.integers(0, 256))
        if rng.random() < 0.3:
            data = data[: int(rng.integers(0, len(data)))]
        try:
            image = decode_pcx(bytes(data), "m.pcx")
        except FormatError:
            outcomes.add("error")
        else:
            assert image.ndim == 3 and image.shape[2] == 4 and image.dtype == np.uint8
            outcomes.add("image")
    assert outcomes == {"error", "image"}


def test_huge_declared_size_is_refused_before_any_allocation():
    data = header_with(xmax=0xFFFF, ymax=0xFFFF, stride=0xFFFF)
    tracemalloc.start()
    try:
        with pytest.raises(TextureTooLarge, match="work budget") as caught:
            decode_pcx(bytes(data), "huge.pcx")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # it would need 16 GiB
    assert caught.value.offset == 4 and "65536×65536" in caught.value.reason


def test_huge_padding_is_refused_by_the_byte_budget():
    data = header_with(xmax=4095, ymax=4095, stride=0xFFFF)  # 4096² pixels is allowed; 1 GiB of lines is not
    with pytest.raises(TextureTooLarge, match="bytes of scanlines") as caught:
        decode_pcx(bytes(data))
    assert caught.value.offset == 66


PEAK_RSS = """
import sys
sys.path.insert(0, "tests")
import numpy as np
from peak_memory import peak_bytes
from io_ms3d_mdl.formats.images import decode_pcx
data = open(sys.argv[1], "rb").read()
before = peak_bytes()
images = [decode_pcx(data) for _ in range(int(sys.argv[2]))]  # all kept, as an import keeps its skins
after = peak_bytes()
print(before, after, images[0].shape, int(images[0][..., 0].astype(np.int64).sum()))
"""


def padded_planes(indices: np.ndarray, planes: int, stride: int) -> np.ndarray:
    """One-bit planes with each line padded to ``stride`` bytes (zeros, which run-length encode to almost nothing)."""
    bits = (indices[:, None, :] >> np.arange(planes, dtype=np.uint8)[None, :, None]) & 1
    packed = np.packbits(bits, axis=2)
    out = np.zeros((*packed.shape[:2], stride), np.uint8)
    out[..., : packed.shape[2]] = packed
    return out


@pytest.mark.skipif(sys.platform == "win32", reason="peak memory through the resource module (POSIX)")
def test_padded_bit_planes_cost_what_the_image_costs(tmp_path):
    """A 1-bit, 4-plane 4096×4096 skin with lines padded to 4,096 bytes (a 2 MB file asking for 64 MB of lines, of
    which 8 MB are pixels): the padding is dropped as the runs are decoded, and the planes are unpacked one at a
    time, so four such skins (as one model may have) stay far below 1 GB; unpacked to bits first they took 0.9 GB
    each. Measured as the peak memory of a separate process."""
    side = 4096
    y, x = np.mgrid[:side, :side]
    indices = ((x // 256 + y // 256) % 16).astype(np.uint8)
    path = tmp_path / "padded.pcx"
    path.write_bytes(write_pcx(padded_planes(indices, 4, 4096), side, 1, palette16=PALETTE16))
    assert path.stat().st_size < 3 * MIB
    run = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, str(path), "4"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert run.returncode == 0, run.stderr
    before, after, *rest = run.stdout.split(maxsplit=2)
    peak, grown = int(after), int(after) - int(before)
    image_bytes = side * side * 4  # what one skin produces: 64 MB of RGBA
    assert grown < 4 * image_bytes + 120 * MIB, f"{grown / MIB:.0f} MB for four skins"
    assert peak < 1024 * MIB
    expected = int(PALETTE16[indices, 0].astype(np.int64).sum())
    assert rest[-1].strip().endswith(str(expected))


def test_padding_is_dropped_whatever_the_chunks(monkeypatch):
    """Runs and counts cut at every place a chunk can end, lines padded to odd strides: the same picture."""
    indices = patchy(37, 29, 16)
    for stride in (4, 5, 63, 64, 200):
        data = write_pcx(padded_planes(indices, 4, stride), 29, 1, palette16=PALETTE16)
        for chunk in (1, 2, 3, 7, 64, 1 << 14):
            monkeypatch.setattr(pcx, "CHUNK", chunk)
            np.testing.assert_array_equal(decode_pcx(data)[..., :3], PALETTE16[indices], err_msg=f"{stride} {chunk}")


def test_the_work_limit_scales_the_pixel_budget():
    data = write_pcx(indexed_scanlines(patchy(64, 64)), 64, palette256=PALETTE)
    with using_budget(Budget(1 / 8192)), pytest.raises(TextureTooLarge):  # 2,048 pixels
        decode_pcx(data)
    assert decode_pcx(data, max_pixels=4096).shape == (64, 64, 4)


# --- the MilkShape import --------------------------------------------------------------------------------------


def test_real_models_find_their_pcx_and_get_pixels():
    for model, texture in (("gun.ms3d", "new skin.pcx"), ("morbo/morbo.ms3d", "MORBO.pcx")):
        scene = load_ms3d(str(coverage_dir() / model))
        (material,) = scene.materials
        ref = material.base_texture
        assert ref.resolved_path and ref.resolved_path.endswith(texture)  # a space / other letter case
        assert not ref.loadable and ref.pixels is not None and ref.pixels.shape == (256, 256, 4)
        np.testing.assert_array_equal(ref.pixels, pillow_rgba(ref.resolved_path))
        assert not [w for w in scene.warnings if "texture" in w]


def write_model(tmp_path, textures: list[str], name="model.ms3d") -> str:
    spec = quad_spec()
    spec.materials = [Material(f"m{i}", texture=t) for i, t in enumerate(textures)]
    spec.groups = [Group(f"g{i}", [min(i, 1)], i) for i in range(len(textures))]
    path = tmp_path / name
    path.write_bytes(write_ms3d(spec))
    return str(path)


def small_pcx(seed: int = 0, size: int = 64) -> bytes:
    return write_pcx(indexed_scanlines(patchy(size, size) + seed), size, palette256=PALETTE)


def test_broken_pcx_gives_a_warning_and_a_placeholder(tmp_path):
    data = small_pcx()
    (tmp_path / "Skin A.PCX").write_bytes(data[: len(data) // 3])
    (tmp_path / "textures").mkdir()
    (tmp_path / "textures" / "ok.pcx").write_bytes(data)
    (tmp_path / "plain.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    scene = load_ms3d(write_model(tmp_path, [".\\skin a.pcx", "C:\\art\\OK.pcx", "plain.png"]))
    broken, ok, plain = (m.base_texture for m in scene.materials)
    assert broken.pixels is None and not broken.loadable  # a placeholder, never a file Blender fails on
    (warning,) = [w for w in scene.warnings if "Skin A.PCX" in w]
    assert "could not be decoded" in warning and "at byte offset" in warning
    assert ok.pixels.shape == (64, 64, 4) and not ok.loadable
    assert plain.pixels is None and plain.loadable  # formats Blender reads are left to it


def test_one_file_is_decoded_once(tmp_path):
    (tmp_path / "skin.pcx").write_bytes(small_pcx())
    scene = load_ms3d(write_model(tmp_path, ["skin.pcx", "SKIN.pcx"]))
    first, second = (m.base_texture for m in scene.materials)
    assert first.pixels is second.pixels


def test_import_pixel_budget_stops_decoding(tmp_path, monkeypatch):
    from io_ms3d_mdl.budget import Budget

    # The tiny Work Limit is for the pixel budgets; the model's datablocks keep their default budgets.
    defaults = Budget()
    for name in ("objects", "shape_keys", "drivers", "actions", "custom_properties", "materials"):
        value = getattr(defaults, name)
        monkeypatch.setattr(Budget, name, property(lambda self, value=value: value))
    for i in range(5):
        (tmp_path / f"s{i}.pcx").write_bytes(small_pcx(i))
    options = Ms3dOptions(work_limit=1 / 4096)  # 4,096 pixels a texture, 16,384 an import: four 64×64 skins
    scene = load_ms3d(write_model(tmp_path, [f"s{i}.pcx" for i in range(5)]), options)
    decoded = [m.base_texture.pixels is not None for m in scene.materials]
    assert decoded == [True, True, True, True, False]
    assert any("s4.pcx" in w and "work budget" in w for w in scene.warnings)

    scene = load_ms3d(write_model(tmp_path, ["s0.pcx"]), Ms3dOptions(work_limit=1 / 8192))
    assert scene.materials[0].base_texture.pixels is None
    assert any("s0.pcx" in w and "work budget" in w for w in scene.warnings)


def test_file_size_budget_still_ends_the_import(tmp_path):
    (tmp_path / "big.pcx").write_bytes(small_pcx() + bytes(300_000))
    with pytest.raises(BudgetExceeded, match="file size"):
        load_ms3d(write_model(tmp_path, ["big.pcx"]), Ms3dOptions(work_limit=1 / 2048))


# --- in Blender ------------------------------------------------------------------------------------------------


@pytest.mark.blender
def test_blender_import_shows_the_pcx_skin(blender):
    bpy = blender
    path = coverage_dir() / "gun.ms3d"
    assert bpy.ops.import_scene.ms3d(filepath=str(path)) == {"FINISHED"}
    (material,) = bpy.data.materials
    tree = material.node_tree
    image = next(n for n in tree.nodes if n.bl_idname == "ShaderNodeTexImage").image
    assert "io_ms3d_mdl_missing" not in image
    assert tuple(image.size) == (256, 256)
    pixels = np.empty(256 * 256 * 4, np.float32)
    image.pixels.foreach_get(pixels)
    pixels = np.round(pixels.reshape(256, 256, 4)[::-1] * 255).astype(np.uint8)  # Blender's rows go up
    expected = pillow_rgba(coverage_dir() / "new skin.pcx")
    np.testing.assert_array_equal(pixels[37, 101], expected[37, 101])
    np.testing.assert_array_equal(pixels, expected)
    # Packed as the PNG written from the decoded pixels (no float round trip), smaller than the pixels themselves.
    assert image.source == "FILE" and image.file_format == "PNG" and image.name == "new skin.png"
    assert image.alpha_mode == "CHANNEL_PACKED" and image.colorspace_settings.name == "sRGB"
    assert image.packed_file.data[:8] == b"\x89PNG\r\n\x1a\n" and image.packed_file.size < 256 * 256


@pytest.mark.blender
def test_blender_keeps_the_packed_skin_through_save_and_reload(blender, tmp_path):
    bpy = blender
    assert bpy.ops.import_scene.ms3d(filepath=str(coverage_dir() / "gun.ms3d")) == {"FINISHED"}
    blend = tmp_path / "gun.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    (image,) = bpy.data.images
    assert image.packed_file is not None and tuple(image.size) == (256, 256)
    pixels = np.empty(256 * 256 * 4, np.float32)
    image.pixels.foreach_get(pixels)
    pixels = np.round(pixels.reshape(256, 256, 4)[::-1] * 255).astype(np.uint8)
    np.testing.assert_array_equal(pixels, pillow_rgba(coverage_dir() / "new skin.pcx"))


@pytest.mark.blender
def test_png_encoding_is_lossless(blender):
    from io_ms3d_mdl.blender.packed_image import png_bytes

    for shape in ((1, 1, 4), (3, 5, 4), (64, 33, 4)):
        pixels = RNG.integers(0, 256, shape, dtype=np.uint8)
        decoded = Image.open(io.BytesIO(png_bytes(pixels)))
        assert decoded.mode == "RGBA" and decoded.size == (shape[1], shape[0])
        np.testing.assert_array_equal(np.asarray(decoded), pixels)
    for wrong in (np.zeros((2, 2, 3), np.uint8), np.zeros((2, 2, 4), np.float32), np.zeros((0, 4, 4), np.uint8)):
        with pytest.raises(ValueError, match="uint8 pixels"):
            png_bytes(wrong)
