"""Find a model's companion files next to it, case-insensitively (game files mix case: ``pushcart01a.mdl`` beside
``PushCart01a.dx90.vtx``), through the import's confinement: a companion that is a link out of the model's
folders, or not a regular file, is treated as absent."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...access import current, game_root, listing
from .mdl import embedded_bytes
from .model import MdlFile, VtxFile, VvdFile
from .phy import PhyFile, read_phy, read_phy_bytes
from .vtx import read_vtx, read_vtx_bytes
from .vvc import read_vvc, read_vvc_bytes
from .vvd import read_vvd, read_vvd_bytes

# preference order (notes §1.1); Titanfall (MDL v52) ships only ``.dx11.vtx``, Bloodlines (2531) ``.dx80.vtx``
# and ``.dx7_2bone.vtx`` (the DirectX 7 fallback, split for two bones per vertex: last)
VTX_SUFFIXES = (".dx90.vtx", ".dx11.vtx", ".vtx", ".dx80.vtx", ".sw.vtx", ".dx7_2bone.vtx")


@dataclass
class Sidecars:
    vvd: str | None
    vtx: str | None
    phy: str | None
    ani: str | None
    vvc: str | None = None  # Titanfall's vertex colours (v52; v53 embeds them in the .mdl)


def find_sidecars(mdl_path: str) -> Sidecars:
    folder = os.path.dirname(os.path.abspath(mdl_path))
    stem = os.path.splitext(os.path.basename(mdl_path))[0].lower()
    names = listing(folder)
    confinement = current(mdl_path)

    def find(*suffixes: str) -> str | None:
        for suffix in suffixes:
            found = names.get(stem + suffix)
            if found is not None:
                found = confinement.find(folder, found)
                if found:
                    return found
        return None

    return Sidecars(find(".vvd"), find(*VTX_SUFFIXES), find(".phy"), find(".ani"), find(".vvc"))


def find_ani(mdl_path: str, block_name: str) -> str | None:
    """The model's animation block file: as named in the model (relative to the game root), else beside it."""
    root = game_root(mdl_path)
    confinement = current(mdl_path)
    found = confinement.find_first(confinement.lookup or ((root,) if root else ()), block_name) if block_name else None
    if found:
        return found
    return find_sidecars(mdl_path).ani


def read_mesh_companions(
    mdl: MdlFile, sidecars: Sidecars, lod: int | None = None
) -> tuple[VvdFile | None, VtxFile | None, list[str]]:
    """The vertex pool and triangle lists: from inside a v53 model where its header says they are, else from the
    files beside it; Titanfall's vertex colours and second UV set (``.vvc``) ride on the pool; and notes on what was
    read but could not be used. ``lod``: the one level of detail to read (see ``read_vtx``), None for all."""
    vvd = mdl.own_vertices or _companion(mdl, "vvd", read_vvd_bytes, read_vvd, sidecars.vvd)
    vtx = _companion(
        mdl, "vtx", lambda data, name: read_vtx_bytes(data, name, lod), lambda path: read_vtx(path, lod), sidecars.vtx
    )
    vvc = _companion(mdl, "vvc", read_vvc_bytes, read_vvc, sidecars.vvc)
    notes = []
    if vvc is not None and vvd is not None:
        disk = len(vvd.order) if vvd.order is not None else len(vvd.vertices)
        if int(vvc.lod_vertex_counts[0]) != int(vvd.lod_vertex_counts[0]) or len(vvc.colors) < disk:
            notes.append(
                f"the vertex colours of the .vvc ({len(vvc.colors):,} vertices) do not match the "
                f"{int(vvd.lod_vertex_counts[0]):,} vertices of the .vvd; they were not imported"
            )
        else:  # per disk vertex, like the .vvd: the same fixup replay puts them in pool order
            take = vvd.order if vvd.order is not None else slice(None)
            vvd.colors = np.ascontiguousarray(vvc.colors[take])
            vvd.uv2 = np.ascontiguousarray(vvc.uv2[take]) if vvc.uv2 is not None else None
    return vvd, vtx, notes


def read_physics_companion(mdl: MdlFile, sidecars: Sidecars) -> PhyFile | None:
    """The collision model: embedded in a v53 model, else the ``.phy`` beside it, else None."""
    return _companion(mdl, "phy", read_phy_bytes, read_phy, sidecars.phy)


def _companion(mdl: MdlFile, kind: str, from_bytes: Callable, from_file: Callable, path: str | None):
    """One companion, read from inside the model when its header embeds it, else from ``path`` (None: absent)."""
    data = embedded_bytes(mdl, kind)
    if data is not None:  # errors name the model and where the section starts in it
        name = os.path.basename(mdl.path or "model.mdl")
        return from_bytes(data, f"{name} (.{kind} embedded at offset {mdl.embedded[kind][0]:,})")
    return from_file(path) if path else None
