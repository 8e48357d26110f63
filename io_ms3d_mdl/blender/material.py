"""Principled BSDF materials and their images, from :class:`MaterialData`."""

from __future__ import annotations

import os

import bpy

from ..errors import Warnings
from ..scene.types import ImageRef, MaterialData

MISSING_IMAGE_PROP = "io_ms3d_mdl_missing"


class ImageLoader:
    """Loads each texture file once per import; a missing or unreadable one becomes a named placeholder
    (so the material keeps its node and the artist can relink it) plus one warning.
    """

    def __init__(self, warnings: Warnings) -> None:
        self.warnings = warnings
        self._cache: dict[str, bpy.types.Image] = {}

    def get(self, ref: ImageRef) -> bpy.types.Image:
        key = ref.resolved_path or ref.raw_path
        image = self._cache.get(key)
        if image is None:
            image = self._load(ref)
            self._cache[key] = image
        return image

    def _load(self, ref: ImageRef) -> bpy.types.Image:
        name = os.path.basename(ref.raw_path.replace("\\", "/")) or "texture"
        if ref.resolved_path:
            try:
                image = bpy.data.images.load(ref.resolved_path, check_existing=True)
            except RuntimeError as exc:
                self.warnings.add(f"texture '{ref.resolved_path}' could not be loaded: {exc}")
            else:
                # Judge by extension: asking for the size would decode every texture during the import.
                if os.path.splitext(ref.resolved_path)[1].lower() not in bpy.path.extensions_image:
                    self.warnings.add(
                        f"texture '{os.path.basename(ref.resolved_path)}' is in a format Blender cannot read"
                    )
                    image[MISSING_IMAGE_PROP] = True
                return image
        image = bpy.data.images.new(name, 8, 8)
        image.source = "FILE"
        image.filepath = ref.raw_path.replace("\\", "/")
        image[MISSING_IMAGE_PROP] = True
        return image


def build_material(data: MaterialData, images: ImageLoader) -> bpy.types.Material:
    mat = bpy.data.materials.new(data.name)
    if mat.node_tree is None:  # 4.2/4.5; 5.0 creates the tree (and deprecates use_nodes)
        mat.use_nodes = True
    tree = mat.node_tree
    bsdf = next(n for n in tree.nodes if n.bl_idname == "ShaderNodeBsdfPrincipled")
    inputs = bsdf.inputs
    inputs["Base Color"].default_value = (*data.base_color, 1.0)
    inputs["Alpha"].default_value = data.alpha
    inputs["Roughness"].default_value = data.roughness
    inputs["Specular IOR Level"].default_value = data.specular_level
    inputs["Specular Tint"].default_value = (*data.specular_tint, 1.0)
    inputs["Emission Color"].default_value = (*data.emission_color, 1.0)
    inputs["Emission Strength"].default_value = data.emission_strength
    mat.diffuse_color = (*data.base_color, data.alpha)  # what Solid view shows
    mat.roughness = data.roughness

    x = bsdf.location.x - 400
    if data.base_texture is not None:
        tex = tree.nodes.new("ShaderNodeTexImage")
        tex.label = "Base Color"
        tex.image = images.get(data.base_texture)
        tex.location = (x, bsdf.location.y)
        tree.links.new(tex.outputs["Color"], inputs["Base Color"])
        if data.use_texture_alpha:
            _link_alpha(tree, tex.outputs["Alpha"], inputs["Alpha"], data.alpha)
        if data.emission_strength > 0:
            # Fixed-function GL (what MilkShape shows) modulates emissive by the texture; a flat emission colour
            # would wash the model out in grey.
            mul = tree.nodes.new("ShaderNodeVectorMath")
            mul.operation = "MULTIPLY"
            mul.label = "Emissive × Texture"
            mul.inputs[1].default_value = data.emission_color
            mul.location = (bsdf.location.x - 200, bsdf.location.y - 500)
            tree.links.new(tex.outputs["Color"], mul.inputs[0])
            tree.links.new(mul.outputs["Vector"], inputs["Emission Color"])
    if data.alpha_texture is not None:
        tex = tree.nodes.new("ShaderNodeTexImage")
        tex.label = "Alpha Map"
        tex.image = images.get(data.alpha_texture)
        if MISSING_IMAGE_PROP not in tex.image:
            tex.image.colorspace_settings.name = "Non-Color"
        tex.location = (x, bsdf.location.y - 300)
        _link_alpha(tree, tex.outputs["Color"], inputs["Alpha"], data.alpha)
    for key, value in data.props.items():
        mat[key] = value
    return mat


def _link_alpha(
    tree: bpy.types.NodeTree, source: bpy.types.NodeSocket, alpha: bpy.types.NodeSocket, factor: float
) -> None:
    """Texture alpha times the material's opacity (a Math node only when the opacity is not 1)."""
    if factor >= 1.0:
        tree.links.new(source, alpha)
        return
    mul = tree.nodes.new("ShaderNodeMath")
    mul.operation = "MULTIPLY"
    mul.inputs[1].default_value = factor
    mul.location = (alpha.node.location.x - 200, alpha.node.location.y - 450)
    tree.links.new(source, mul.inputs[0])
    tree.links.new(mul.outputs[0], alpha)
