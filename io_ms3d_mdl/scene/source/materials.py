"""Source materials resolved from the game tree: VMT → Principled values, VTF → RGBA pixels (or compressed blocks
that Blender decodes itself). No ``bpy``.

Bloodlines (MDL 2531) keeps each texture as a ``.tth`` header and a zlib-compressed ``.ttz`` body
(``formats.source.tth``) where later games have a ``.vtf``; its VMTs are the same KeyValues text.

Lookup as the engine does it: for a texture name, the first ``materials/<cdmaterials dir>/<name>.vmt`` that exists,
trying the material folders in order, under the model's game root (the folder holding ``models/``) and then under
extra search roots (game or mod folders the user lists), case-insensitively with ``\\`` normalised, and never
outside those roots (``access.Confinement``). A material that cannot be found is still made, marked
(``source_missing``) and given a flat placeholder colour. Decoded pixels are bounded per texture (the largest
mipmap within the budget) and per import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ...access import Confinement, read_file, shown
from ...errors import BudgetExceeded, FormatError
from ...formats.source.tth import tth_to_vtf
from ...formats.source.vmt import Vmt, parse_vmt
from ...formats.source.vtf import UnsupportedTexture, read_vtf_bytes
from ..decoded_textures import PixelAllowance
from ..types import ImageRef, MaterialData, SceneData

PLACEHOLDER = (1.0, 0.0, 1.0)  # the engine's own "missing" magenta, so nobody mistakes it for a real colour
MAX_ALPHATEST_REFERENCE = 1.0


@dataclass
class Finder:
    roots: list[str]  # game root first, then the user's extra roots
    confinement: Confinement | None = None  # None: exactly the roots
    pixels: PixelAllowance = field(default_factory=PixelAllowance)  # of the import's texture pixel budget

    def __post_init__(self) -> None:
        self.confinement = self.confinement or Confinement.for_roots(self.roots)

    def find(self, relative: str) -> str | None:
        return self.confinement.find_first(self.roots, relative)  # one index over the roots, not a walk per root

    def vmt(self, name: str, folders: list[str]) -> str | None:
        name = name.replace("\\", "/").strip("/")
        # Models list the same folder more than once (often "" twice, and "" is the last resort anyway).
        for folder in dict.fromkeys(f.replace("\\", "/").strip("/") for f in [*folders, ""]):
            found = self.find(f"materials/{folder}/{name}.vmt" if folder else f"materials/{name}.vmt")
            if found:
                return found
        return None

    def texture(self, name: str, warnings: list[str], cache: dict[str, ImageRef]) -> ImageRef | None:
        """A VTF decoded to RGBA (top row first), or kept as its compressed blocks for Blender's own decoder, cached
        per path; failures are warnings, never errors."""
        name = name.replace("\\", "/").strip().removesuffix(".vtf")
        if not name:
            return None
        path = self.find(f"materials/{name}.vtf")
        body = None
        if path is None:  # Bloodlines: a .tth header and a zlib .ttz body hold the VTF
            path, body = self.find(f"materials/{name}.tth"), self.find(f"materials/{name}.ttz")
            path = path if body else None
        key = path or name
        if key in cache:
            return cache[key]
        ref = ImageRef(name + (".tth" if body else ".vtf"), path, loadable=False)
        if path is None:
            warnings.append(f"texture 'materials/{shown(name)}.vtf' was not found")
        elif refusal := self.pixels.refusal(os.path.basename(path)):
            warnings.append(refusal)
        else:
            try:
                data = tth_to_vtf(read_file(path), read_file(body), path) if body else read_file(path)
                image = read_vtf_bytes(data, path, self.pixels.limit(), keep_blocks=True)
                if image.blocks:
                    ref.blocks = image.blocks[0]
                else:
                    ref.pixels = image.faces[0]
                self.pixels.spend(image.width * image.height * image.face_count)
            except UnsupportedTexture as exc:
                warnings.append(f"texture '{os.path.basename(path)}': {exc}")
            except BudgetExceeded:
                raise
            except FormatError as exc:
                warnings.append(f"texture '{os.path.basename(path)}' could not be read: {exc.reason}")
        cache[key] = ref
        return ref


def source_material(
    texture: str, folders: list[str], finder: Finder, scene: SceneData, cache: dict[str, ImageRef]
) -> MaterialData:
    name = texture.replace("\\", "/").rsplit("/", 1)[-1] or "material"
    path = finder.vmt(texture, folders)
    if path is None:
        scene.warnings.add(f"material '{shown(texture)}' was not found in the model's material folders")
        return _placeholder(name, texture)
    warnings: list[str] = []
    try:
        vmt = parse_vmt(read_file(path), path, lambda include: _read(finder, include))
    except BudgetExceeded:
        raise
    except FormatError as exc:
        scene.warnings.add(f"material '{shown(texture)}' could not be read: {exc.reason}")
        return _placeholder(name, texture)
    material = material_from_vmt(vmt, name, finder, warnings, cache)
    material.props.update(
        {"source_texture": texture, "source_vmt": os.path.basename(path), "source_shader": vmt.shader}
    )
    for warning in warnings:
        scene.warnings.add(f"material '{shown(name)}': {warning}")
    return material


def _placeholder(name: str, texture: str) -> MaterialData:
    """The flat stand-in for a material whose VMT is missing or unreadable, marked so the import counts it."""
    return MaterialData(name=name, base_color=PLACEHOLDER, props={"source_texture": texture, "source_missing": True})


def _read(finder: Finder, include: str) -> bytes | None:
    path = finder.find(include.replace("\\", "/"))
    return read_file(path) if path else None


def material_from_vmt(
    vmt: Vmt, name: str, finder: Finder, warnings: list[str], cache: dict[str, ImageRef]
) -> MaterialData:
    """Principled values for the shader parameters that carry over to EEVEE and Cycles."""
    material = MaterialData(name=name, base_color=(1.0, 1.0, 1.0))
    base = vmt.text("$basetexture") or vmt.text("$iris")  # EyeRefract names its texture $iris
    material.base_texture = finder.texture(base, warnings, cache) if base else None
    bump = vmt.text("$bumpmap") or vmt.text("$normalmap")
    material.normal_texture = finder.texture(bump, warnings, cache) if bump else None
    tint = vmt.color("$color2") or vmt.color("$color")
    if tint is not None:
        material.base_color = tint
    if vmt.flag("$translucent"):
        material.use_texture_alpha, material.blend = True, True
    if vmt.flag("$alphatest"):
        material.use_texture_alpha = True
        material.alpha_clip = min(max(vmt.number("$alphatestreference", 0.5) or 0.5, 0.0), MAX_ALPHATEST_REFERENCE)
    alpha = vmt.number("$alpha")
    if alpha is not None:
        material.alpha = float(min(max(alpha, 0.0), 1.0))
    if vmt.flag("$selfillum"):
        material.emission_from_texture_alpha = True  # the base texture's alpha masks self-illumination
        material.emission_strength = 1.0
        material.emission_color = vmt.color("$selfillumtint") or (1.0, 1.0, 1.0)
    if vmt.flag("$phong"):
        exponent = vmt.number("$phongexponent", 5.0) or 5.0
        material.roughness = float(np.sqrt(np.sqrt(2.0 / (min(max(exponent, 1.0), 150.0) + 2.0))))
        material.specular_level = float(min(0.5 * (vmt.number("$phongboost", 1.0) or 1.0), 1.0))
    else:
        material.roughness, material.specular_level = 0.8, 0.3  # diffuse-looking surfaces without phong
    material.double_sided = vmt.flag("$nocull")  # Source culls back faces unless told not to
    return material


def add_materials(
    scene: SceneData, textures: list[str], folders: list[str], roots: list[str], confinement: Confinement
) -> None:
    finder = Finder([r for r in roots if r], confinement)
    cache: dict[str, ImageRef] = {}
    for texture in textures:
        scene.materials.append(source_material(texture, folders, finder, scene, cache))
