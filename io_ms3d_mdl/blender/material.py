"""Principled BSDF materials and their images, from :class:`MaterialData`."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import bpy
import numpy as np

from ..access import shown
from ..errors import Warnings
from ..scene.types import ImageRef, MaterialData
from . import dds
from .rollback import record_written_file

MISSING_IMAGE_PROP = "io_ms3d_mdl_missing"
# Games pack masks (self-illumination, envmap, phong) into alpha as often as opacity: decoded textures keep colour
# and alpha independent, or a mask of ~0 would multiply the colour away. Opacity still comes from the Alpha output.
CHANNEL_PACKED = "CHANNEL_PACKED"


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
        if ref.blocks is not None and dds.decodes_as_ours(ref.blocks):
            return _image_from_pixels(name, ref.blocks)  # Blender's decoder, compressed in the .blend
        if ref.pixels is not None:  # decoded by us (blocks Blender cannot take are decoded here, in numpy)
            return _image_from_pixels(name, ref.pixels)
        if ref.resolved_path and ref.loadable:
            try:
                # Never check_existing: an image the user already has must not be re-tagged or re-coloured by us.
                image = bpy.data.images.load(ref.resolved_path, check_existing=False)
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
        # A generated placeholder: a file path (the raw name may be absolute, or point anywhere) would make Blender
        # read that file later, and an exporter embed it.
        image = bpy.data.images.new(name, 8, 8)
        image.generated_color = (1.0, 0.0, 1.0, 1.0)
        image[MISSING_IMAGE_PROP] = True
        image["io_ms3d_mdl_wanted"] = shown(ref.raw_path)
        return image


_png_folder: list[str | None] = [None]


@contextmanager
def texture_output(folder: str | None) -> Iterator[None]:
    """While importing, write decoded textures as PNG files into ``folder`` instead of packing them."""
    _png_folder.append(folder)
    try:
        yield
    finally:
        _png_folder.pop()


def _image_from_pixels(name: str, pixels: np.ndarray | dds.Blocks) -> bpy.types.Image:
    """A texture we decoded (e.g. a VTF), or block-compressed data Blender decodes itself, as an image packed into
    the .blend file (blocks stay compressed there), or saved as a PNG."""
    stem = os.path.splitext(name)[0]
    if isinstance(pixels, np.ndarray):
        packed_exr = pixels.dtype.kind == "f" and not _png_folder[-1]  # HDR packs as OpenEXR
        image = _image_from_array(stem + (".exr" if packed_exr else ".png"), pixels)
    else:
        image = dds.load(stem + ".dds", pixels)
        image.alpha_mode = CHANNEL_PACKED
    folder = _png_folder[-1]
    if folder and image.packed_file is not None:
        return _dds_as_png(image, folder, name)
    if folder:
        path = _save_png(image, folder, _file_stem(name))
        image.source = "FILE"
        image.filepath = bpy.path.relpath(path)  # moves with the .blend
    elif image.packed_file is None:
        image.pack()
    return image


def _dds_as_png(image: bpy.types.Image, folder: str, name: str) -> bpy.types.Image:
    """The PNG of a DDS-packed image (decoded by Blender), in place of it."""
    image.size[0]  # reading the size makes Blender decode it: saving needs the pixels in memory
    path = _save_png(image, folder, _file_stem(name))
    bpy.data.images.remove(image)  # (unpacking instead would print to the console)
    image = bpy.data.images.load(path, check_existing=False)
    image.name = os.path.splitext(name)[0] + ".png"
    image.alpha_mode = CHANNEL_PACKED
    image.filepath = bpy.path.relpath(path)  # moves with the .blend
    return image


def _image_from_array(name: str, pixels: np.ndarray) -> bpy.types.Image:
    """A generated image holding ``pixels`` (top row first, as decoders give them): uint8, or float (HDR, linear;
    packed as OpenEXR)."""
    height, width = pixels.shape[:2]
    hdr = pixels.dtype.kind == "f"
    image = bpy.data.images.new(name, width, height, alpha=True, float_buffer=hdr)
    image.alpha_mode = CHANNEL_PACKED
    if hdr:
        image.colorspace_settings.name = dds.LINEAR
    flipped = np.ascontiguousarray(pixels[::-1], dtype=np.float32)  # Blender's rows start at the bottom
    image.pixels.foreach_set((flipped if hdr else flipped / 255.0).ravel())
    return image


def _save_png(image: bpy.types.Image, folder: str, stem: str) -> str:
    """Write ``image`` as ``folder/<name>.png`` without ever overwriting a file this import did not create: an
    existing file with the same bytes is reused, a different one gets a numbered sibling. Each file (and the
    folder, when made here) is created exclusively and recorded, so a failed import deletes what it wrote."""
    if not os.path.isdir(folder):
        os.makedirs(folder)
        record_written_file(folder)
    fd, temp = tempfile.mkstemp(suffix=".png", prefix=".io_ms3d_mdl-", dir=folder)
    os.close(fd)
    try:
        image.filepath_raw = temp
        image.file_format = "PNG"
        image.save()
        with open(temp, "rb") as f:
            data = f.read()
    finally:
        with contextlib.suppress(OSError):
            os.remove(temp)
    for n in range(10_000):
        target = os.path.join(folder, f"{stem}.png" if n == 0 else f"{stem}_{n}.png")
        try:
            with open(target, "xb") as f:  # exclusive: fails rather than replace
                record_written_file(target)
                f.write(data)
        except FileExistsError:
            if _same_bytes(target, data):
                return target
            continue
        return target
    raise RuntimeError(f"no free file name for texture '{stem}' in {folder}")


def _file_stem(name: str) -> str:
    """A safe file name stem from a name inside a model: no separators, drive colons, leading dots or odd bytes."""
    stem = re.sub(r"[^A-Za-z0-9._ -]", "_", os.path.splitext(os.path.basename(name))[0]).strip(" .")
    return stem[:100] or "texture"


def _same_bytes(path: str, data: bytes) -> bool:
    try:
        if not os.path.isfile(path) or os.path.getsize(path) != len(data):
            return False
        with open(path, "rb") as f:
            return f.read() == data
    except OSError:
        return False


class PlainMaterials:
    """Materials without textures (placeholders for missing VMTs, plain MilkShape colours) are copies of the
    import's first one, with the values that differ written after: copying a material is 2–4× cheaper than
    making its node tree again, and most such materials of a model share most values."""

    def __init__(self) -> None:
        self.template: bpy.types.Material | None = None
        self.render_method = ""

    def new(self, data: MaterialData) -> bpy.types.Material:
        plain = data.base_texture is None and data.alpha_texture is None and data.normal_texture is None
        if plain and self.template is not None:
            mat = self.template.copy()
            mat.name = data.name  # after the copy's own name: numbered as ``materials.new`` would number it
            for key in list(mat.keys()):
                del mat[key]
            if self.render_method:
                mat.surface_render_method = self.render_method
            return mat
        mat = bpy.data.materials.new(data.name)
        if mat.node_tree is None:  # 4.2/4.5; 5.0 creates the tree (and deprecates use_nodes)
            mat.use_nodes = True
        if plain:
            self.template = mat
            self.render_method = getattr(mat, "surface_render_method", "")
        return mat


def build_material(data: MaterialData, images: ImageLoader, plain: PlainMaterials | None = None) -> bpy.types.Material:
    mat = (plain or PlainMaterials()).new(data)
    tree = mat.node_tree
    bsdf = next(n for n in tree.nodes if n.bl_idname == "ShaderNodeBsdfPrincipled")
    inputs = bsdf.inputs
    _set_default(inputs["Base Color"], (*data.base_color, 1.0))
    _set_default(inputs["Alpha"], data.alpha)
    _set_default(inputs["Roughness"], data.roughness)
    _set_default(inputs["Specular IOR Level"], data.specular_level)
    _set_default(inputs["Specular Tint"], (*data.specular_tint, 1.0))
    _set_default(inputs["Emission Color"], (*data.emission_color, 1.0))
    _set_default(inputs["Emission Strength"], data.emission_strength)
    mat.diffuse_color = (*data.base_color, data.alpha)  # what Solid view shows
    mat.roughness = data.roughness

    x = bsdf.location.x - 400
    layout = _Layout(tree)
    if data.base_texture is not None:
        tex = tree.nodes.new("ShaderNodeTexImage")
        tex.label = "Base Color"
        tex.image = images.get(data.base_texture)
        layout.put(tex, x, bsdf.location.y)
        color = tex.outputs["Color"]
        if tuple(data.base_color) != (1.0, 1.0, 1.0) and data.props.get("source_shader"):
            tint = tree.nodes.new("ShaderNodeMix")  # Source's $color/$color2 tints the base texture
            tint.data_type, tint.blend_type, tint.label = "RGBA", "MULTIPLY", "Tint"
            tint.inputs["Factor"].default_value = 1.0
            tint.inputs[7].default_value = (*data.base_color, 1.0)
            layout.put(tint, x + 200, bsdf.location.y + 150)
            tree.links.new(color, tint.inputs[6])
            color = tint.outputs[2]
        tree.links.new(color, inputs["Base Color"])
        if data.emission_from_texture_alpha:
            tree.links.new(tex.outputs["Color"], inputs["Emission Color"])
            tree.links.new(tex.outputs["Alpha"], inputs["Emission Strength"])
        if data.use_texture_alpha:
            _link_alpha(layout, tex.outputs["Alpha"], inputs["Alpha"], data.alpha)
        if data.emission_strength > 0 and not data.emission_from_texture_alpha:
            # Fixed-function GL (what MilkShape shows) modulates emissive by the texture; a flat emission colour
            # would wash the model out in grey.
            mul = tree.nodes.new("ShaderNodeVectorMath")
            mul.operation = "MULTIPLY"
            mul.label = "Emissive × Texture"
            mul.inputs[1].default_value = data.emission_color
            layout.put(mul, bsdf.location.x - 200, bsdf.location.y - 500)
            tree.links.new(tex.outputs["Color"], mul.inputs[0])
            tree.links.new(mul.outputs["Vector"], inputs["Emission Color"])
    if data.alpha_texture is not None:
        tex = tree.nodes.new("ShaderNodeTexImage")
        tex.label = "Alpha Map"
        tex.image = images.get(data.alpha_texture)
        layout.put(tex, x, bsdf.location.y - 300)
        if MISSING_IMAGE_PROP not in tex.image:  # a missing map leaves the surface opaque, not placeholder-grey
            tex.image.colorspace_settings.name = "Non-Color"
            _link_alpha(layout, tex.outputs["Color"], inputs["Alpha"], data.alpha)
    if data.normal_texture is not None:
        _normal_map(layout, images.get(data.normal_texture), inputs["Normal"], (x, bsdf.location.y - 600))
    if data.alpha_clip is not None and inputs["Alpha"].links:
        _clip_alpha(layout, inputs["Alpha"], data.alpha_clip)
    if data.blend and hasattr(mat, "surface_render_method"):
        mat.surface_render_method = "BLENDED"
    layout.write()
    mat.use_backface_culling = not data.double_sided
    for key, value in data.props.items():
        mat[key] = value
    return mat


class _Layout:
    """Where the nodes a material adds go, written at once when it is complete: each ``node.location = ...``
    re-runs the node tree's update (30–60 µs), one ``foreach_set`` over the tree's nodes does not."""

    def __init__(self, tree: bpy.types.NodeTree) -> None:
        self.tree = tree
        self.spots: list[tuple[str, float, float]] = []

    def put(self, node: bpy.types.Node, x: float, y: float) -> None:
        self.spots.append((node.name, x, y))

    def write(self) -> None:
        if not self.spots:
            return
        nodes = self.tree.nodes
        flat = np.empty(2 * len(nodes), dtype=np.float32)
        nodes.foreach_get("location", flat)
        for name, x, y in self.spots:
            i = nodes.find(name)
            flat[2 * i : 2 * i + 2] = (x, y)
        nodes.foreach_set("location", flat)


def _set_default(socket: bpy.types.NodeSocket, value: float | tuple[float, ...]) -> None:
    """Write a socket's value only when it changes (compared as the float32 Blender stores): each write re-runs
    the node tree's update, about 20 µs, most of a plain material's build, and files mostly keep the defaults."""
    if _float32_bytes(value) != _float32_bytes(socket.default_value):
        socket.default_value = value


def _float32_bytes(value: float | Sequence[float]) -> bytes:
    return array("f", (value,) if isinstance(value, (int, float)) else value).tobytes()


def _normal_map(
    layout: _Layout, image: bpy.types.Image, normal: bpy.types.NodeSocket, location: tuple[float, float]
) -> None:
    """A DirectX-style normal map (Source's: green points down) flipped into Blender's OpenGL convention."""
    tree = layout.tree
    tex = tree.nodes.new("ShaderNodeTexImage")
    tex.label, tex.image = "Normal Map (DirectX)", image
    layout.put(tex, *location)
    if MISSING_IMAGE_PROP not in image:
        image.colorspace_settings.name = "Non-Color"
    split = tree.nodes.new("ShaderNodeSeparateColor")
    flip = tree.nodes.new("ShaderNodeMath")
    flip.operation = "SUBTRACT"
    flip.inputs[0].default_value = 1.0
    join = tree.nodes.new("ShaderNodeCombineColor")
    node = tree.nodes.new("ShaderNodeNormalMap")
    for i, n in enumerate((split, flip, join, node)):
        layout.put(n, location[0] + 250 + 180 * i, location[1])
    tree.links.new(tex.outputs["Color"], split.inputs[0])
    tree.links.new(split.outputs[0], join.inputs[0])
    tree.links.new(split.outputs[1], flip.inputs[1])
    tree.links.new(flip.outputs[0], join.inputs[1])
    tree.links.new(split.outputs[2], join.inputs[2])
    tree.links.new(join.outputs[0], node.inputs["Color"])
    tree.links.new(node.outputs["Normal"], normal)


def _clip_alpha(layout: _Layout, alpha: bpy.types.NodeSocket, threshold: float) -> None:
    """Alpha test as a hard step on the alpha input: the same cut-out in EEVEE and Cycles."""
    tree = layout.tree
    source = alpha.links[0].from_socket
    step = tree.nodes.new("ShaderNodeMath")
    step.operation, step.label = "GREATER_THAN", "Alpha Test"
    step.inputs[1].default_value = threshold
    layout.put(step, alpha.node.location.x - 200, alpha.node.location.y - 300)
    tree.links.new(source, step.inputs[0])
    tree.links.new(step.outputs[0], alpha)


def _link_alpha(layout: _Layout, source: bpy.types.NodeSocket, alpha: bpy.types.NodeSocket, factor: float) -> None:
    """Texture alpha times the material's opacity (a Math node only when the opacity is not 1)."""
    tree = layout.tree
    if factor >= 1.0:
        tree.links.new(source, alpha)
        return
    mul = tree.nodes.new("ShaderNodeMath")
    mul.operation = "MULTIPLY"
    mul.inputs[1].default_value = factor
    layout.put(mul, alpha.node.location.x - 200, alpha.node.location.y - 450)
    tree.links.new(source, mul.inputs[0])
    tree.links.new(mul.outputs[0], alpha)
