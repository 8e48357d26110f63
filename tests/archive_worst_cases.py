"""The worst cases of the archive budgets (entries and folders of one VPK, its tree's bytes, the search paths of a
game, the models a listing makes rows for), written fast: trees of millions of entries are assembled from repeated
byte blocks, not entry by entry. Used by ``test_budget_worst_cases.py`` (each case in a fresh process)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from pathlib import Path

from archive_writer import WEntry, write_vpk
from source_writer import SBodyPart, SModel, SourceSpec, quad_mesh, write_source

from io_ms3d_mdl.budget import DEFAULT

SIGNATURE = 0x55AA1234
EMBEDDED = 0x7FFF
Built = tuple[Path, dict, int]


def _record(crc: int = 0, preload: int = 0, offset: int = 0, length: int = 0) -> bytes:
    return struct.pack("<IHHIIH", crc, preload, EMBEDDED, offset, length, 0xFFFF)


def bulk_tree(folders: int, per_folder: int, extension: bytes = b"vtf", preload: int = 0) -> bytes:
    """One extension's block of a tree: ``folders`` folders of ``per_folder`` empty entries (each with ``preload``
    zero bytes kept in the tree, their CRC right)."""
    crc = zlib.crc32(bytes(preload))
    entry = _record(crc, preload) + bytes(preload)
    names = b"".join(b"%x\0" % i + entry for i in range(per_folder))
    return extension + b"\0" + b"".join(b"d/%x\0" % f + names + b"\0" for f in range(folders)) + b"\0"


def vpk_with_model(folder: Path, stem: str, bulk: bytes) -> Path:
    """A single-file VPK holding ``bulk`` (extension blocks, as ``bulk_tree`` makes them) and a small model
    (``models/m.mdl`` with its .vvd and .dx90.vtx, data after the tree); the model's virtual path."""
    loose = write_source(SourceSpec(body_parts=[SBodyPart("b", [SModel("m0", [quad_mesh()])])]), folder / "src", "m")
    files = {ext: loose.with_suffix(suffix).read_bytes() for ext, suffix in (("mdl", ".mdl"), ("vvd", ".vvd"))}
    files["vtx"] = loose.with_name("m.dx90.vtx").read_bytes()
    tree, data = bytearray(bulk), bytearray()
    for ext, blob in files.items():
        name = b"m.dx90" if ext == "vtx" else b"m"
        tree += ext.encode() + b"\0models\0" + name + b"\0" + _record(zlib.crc32(blob), 0, len(data), len(blob))
        tree += b"\0\0"
        data += blob
    tree += b"\0"
    path = folder / f"{stem}.vpk"
    path.write_bytes(struct.pack("<III", SIGNATURE, 1, len(tree)) + bytes(tree) + bytes(data))
    return Path(path, "models", "m.mdl")


def vpk_entries(tmp: Path) -> Built:
    """As many entries as one VPK may hold (a thousand to a folder), and the model imported from inside it."""
    count = DEFAULT.archive_entries - 10
    return vpk_with_model(tmp, "entries", bulk_tree(count // 1000, 1000)), {}, count


def vpk_folders(tmp: Path) -> Built:
    """As many folders as one VPK may hold, one entry each."""
    count = DEFAULT.archive_folders - 10
    return vpk_with_model(tmp, "folders", bulk_tree(count, 1)), {}, count


def vpk_tree_bytes(tmp: Path) -> Built:
    """A tree as large as the budget allows, its bytes mostly preloads (kept in memory with the tree)."""
    size = min(DEFAULT.file_bytes, 128 << 20) - (1 << 20)
    per_entry = 4096 + 21
    return vpk_with_model(tmp, "preloads", bulk_tree(size // per_entry // 100, 100, preload=4096)), {}, size


def search_paths(tmp: Path) -> Built:
    """A game whose gameinfo.txt mounts ``custom/*`` folders of 4,096 tiny VPKs each, as many as the search path
    budget allows, searched for the model's materials."""
    game = tmp / "game"
    model = write_source(
        SourceSpec(body_parts=[SBodyPart("b", [SModel("m0", [quad_mesh()])])], textures=[f"t{i}" for i in range(8)]),
        game / "models",
        "m",
    )
    lines = []
    per_line, lines_count = 4096, DEFAULT.search_paths // 4096
    for line in range(lines_count):
        lines.append(f"game |gameinfo_path|custom{line}/*")
        for i in range(per_line):
            write_vpk(game / f"custom{line}", f"a{i:04d}", [WEntry(f"materials/x{i}/y.vmt", b"y")], single=True)
    (game / "gameinfo.txt").write_text(
        '"GameInfo" { game "many" FileSystem { SearchPaths { ' + " ".join(lines) + " game |gameinfo_path|. } } }"
    )
    return model, {}, DEFAULT.search_paths


IMPORT_CASES: dict[str, Callable[[Path], Built]] = {
    "VPK entries: one archive": vpk_entries,
    "VPK folders: one archive": vpk_folders,
    "VPK tree bytes: preloads": vpk_tree_bytes,
    "search paths: custom/* archives": search_paths,
}


def listed(count: int) -> Callable[[Path], Path]:
    """A VPK of ``count`` ``.mdl`` entries (a hundred to a folder) for the listings."""

    def build(tmp: Path) -> Path:
        path = tmp / "models.vpk"
        tree = bulk_tree(max(1, count // 100), min(count, 100), b"mdl") + b"\0"
        path.write_bytes(struct.pack("<III", SIGNATURE, 1, len(tree)) + tree)
        return path

    return build


LISTING_CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    # (the archive, what lists it: "browser" fills Browse Game Models, "list" walks mounts.list_models)
    "listed models: the browser at the budget": (listed(DEFAULT.listed_models), "browser"),
    "listed models: the browser over 1 M models": (listed(1_000_000), "browser"),
    "listed models: list_models over the entry budget": (listed(DEFAULT.archive_entries - 100), "list"),
}

PROBE = """
import json, sys, time
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
import bpy
from peak_memory import peak_bytes
from io_ms3d_mdl import blender as addon
from io_ms3d_mdl.blender import game_browser, game_sources
from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.filesystem import mounts
addon.register()
start = time.perf_counter()
if {how!r} == "browser":
    rows, note = game_sources.listed_models([{path!r}])
    game_browser.fill(bpy.context, rows)
    count = len(bpy.context.window_manager.io_ms3d_mdl_game_catalog.models)
else:
    count, note = 0, ""
    try:
        for _ in mounts.list_models([{path!r}]):
            count += 1
    except FormatError as exc:
        note = str(exc)
print("RESULT " + json.dumps({{"count": count, "note": note, "seconds": time.perf_counter() - start,
                               "peak_bytes": peak_bytes()}}), flush=True)
if {how!r} == "browser":
    game_browser.fill(bpy.context, [])  # Blender 4.2 crashes at exit holding the rows of an unregistered type
addon.unregister()
"""
