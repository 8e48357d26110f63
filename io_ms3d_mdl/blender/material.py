"""Principled BSDF materials and their images, from :class:`MaterialData`."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import bpy
import numpy as np

from ..access import shown
from ..errors import Warnings
from ..scene.finite import PIXEL_WARNING, finite_pixels
from ..scene.types import ImageRef, IndexedImage, MaterialData
from . import dds
from .packed_image import packed_image, packed_png, png_bytes, png_indexed_bytes
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
            image = _image_from_pixels(name, ref.blocks)  # Blender's decoder, compressed in the .blend
            return self._finite_dds(image, name) if ref.blocks.format in dds.HDR else image
        if ref.indexed is not None:  # palette pixels (GoldSrc), packed as a palette PNG
            return _image_from_pixels(name, ref.indexed)
        if ref.pixels is not None:  # decoded by us (blocks Blender cannot take are decoded here, in numpy)
            pixels = ref.pixels
            if pixels.dtype.kind == "f" and not pixels.flags.writeable:
                pixels = np.array(pixels)
            if finite_pixels(pixels):
                self.warnings.add(PIXEL_WARNING)
            return _image_from_pixels(name, pixels)
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

    def _finite_dds(self, image: bpy.types.Image, name: str) -> bpy.types.Image:
        """An HDR image Blender decodes from its packed DDS: its floats are read back once and, when any is not
        finite (a signed BC6H block of 0x8000 endpoints is -inf in Blender's decoder as in ours), the image is
        replaced by a float image of the repaired pixels (packed as OpenEXR). Only PNG outputs (8 bits, which
        clamp) are left as they are."""
        if image.packed_file is None:
            return image
        width, height = image.size  # (Blender decodes the image here)
        if not image.is_float:
            return image
        pixels = np.empty(width * height * 4, dtype=np.float32)
        image.pixels.foreach_get(pixels)
        if not finite_pixels(pixels):
            return image
        self.warnings.add(PIXEL_WARNING)
        bpy.data.images.remove(image)
        return _image_from_pixels(name, pixels.reshape(height, width, 4)[::-1])  # top row first, as decoders give


_png_folder: list[str | None] = [None]


@contextmanager
def texture_output(folder: str | None) -> Iterator[None]:
    """While importing, write decoded textures as PNG files into ``folder`` instead of packing them."""
    _png_folder.append(folder)
    try:
        yield
    finally:
        _png_folder.pop()


def _image_from_pixels(name: str, pixels: np.ndarray | dds.Blocks | IndexedImage) -> bpy.types.Image:
    """A texture we decoded (e.g. a VTF), or block-compressed data Blender decodes itself, as an image packed into
    the .blend file (blocks stay compressed there; 8-bit pixels as a PNG we write, see ``packed_image.py``), or
    saved as a PNG file."""
    stem = os.path.splitext(name)[0]
    folder = _png_folder[-1]
    if isinstance(pixels, IndexedImage):
        data = png_indexed_bytes(pixels.indices, pixels.palette)
        if folder:
            return _loaded_png(_write_png(folder, _file_stem(name), data), name)
        image = packed_image(stem + ".png", data)
    elif isinstance(pixels, np.ndarray) and pixels.dtype == np.uint8:
        if folder:
            return _loaded_png(_write_png(folder, _file_stem(name), png_bytes(pixels)), name)
        image = packed_png(stem + ".png", pixels)
    elif isinstance(pixels, np.ndarray):  # HDR: packed as OpenEXR, or saved as an 8-bit PNG
        image = _image_from_array(stem + (".png" if folder else ".exr"), pixels)
    else:
        image = dds.load(stem + ".dds", pixels)
    image.alpha_mode = CHANNEL_PACKED
    if folder and image.packed_file is not None:
        return _dds_as_png(image, folder, name)
    if folder:
        path = _write_png(folder, _file_stem(name), _encoded_png(image, folder))
        image.source = "FILE"
        image.filepath = bpy.path.relpath(path)  # moves with the .blend
    elif image.packed_file is None:
        image.pack()
    return image


def _dds_as_png(image: bpy.types.Image, folder: str, name: str) -> bpy.types.Image:
    """The PNG of a DDS-packed image (decoded by Blender), in place of it."""
    image.size[0]  # reading the size makes Blender decode it: saving needs the pixels in memory
    path = _write_png(folder, _file_stem(name), _encoded_png(image, folder))
    bpy.data.images.remove(image)  # (unpacking instead would print to the console)
    return _loaded_png(path, name)


def _loaded_png(path: str, name: str) -> bpy.types.Image:
    """The PNG file this import wrote for the texture ``name``, as its image."""
    image = bpy.data.images.load(path, check_existing=False)
    image.name = os.path.splitext(name)[0] + ".png"
    image.alpha_mode = CHANNEL_PACKED
    image.filepath = bpy.path.relpath(path)  # moves with the .blend
    return image


def _image_from_array(name: str, pixels: np.ndarray) -> bpy.types.Image:
    """A generated image holding ``pixels`` (top row first, as decoders give them): float (HDR, linear; packed as
    OpenEXR). 8-bit pixels become a PNG without one (``png_bytes``); any other integers are read as 0–255."""
    height, width = pixels.shape[:2]
    hdr = pixels.dtype.kind == "f"
    image = bpy.data.images.new(name, width, height, alpha=True, float_buffer=hdr)
    if hdr:
        image.colorspace_settings.name = dds.LINEAR
    flipped = np.ascontiguousarray(pixels[::-1], dtype=np.float32)  # Blender's rows start at the bottom
    image.pixels.foreach_set((flipped if hdr else flipped / 255.0).ravel())
    return image


def _encoded_png(image: bpy.types.Image, folder: str) -> bytes:
    """``image`` encoded as a PNG by Blender, through a temporary file in ``folder`` (removed at once)."""
    fd, temp = tempfile.mkstemp(suffix=".png", prefix=".io_ms3d_mdl-", dir=_made_folder(folder))
    os.close(fd)
    try:
        image.filepath_raw = temp
        image.file_format = "PNG"
        image.save()
        with open(temp, "rb") as f:
            return f.read()
    finally:
        with contextlib.suppress(OSError):
            os.remove(temp)


def _made_folder(folder: str) -> str:
    if not os.path.isdir(folder):
        os.makedirs(folder)
        record_written_file(folder)
    return folder


def _write_png(folder: str, stem: str, data: bytes) -> str:
    """Write ``data`` as ``folder/<stem>.png`` without ever overwriting a file this import did not create: an
    existing file with the same bytes is reused, a different one gets a numbered sibling. Each file (and the
    folder, when made here) is created exclusively and recorded, so a failed import deletes what it wrote."""
    _made_folder(folder)
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


class _Shapes:
    """Materials whose node trees have the same shape (the same nodes and links: see :class:`_Shape`) are copies
    of the import's first of that shape, with their own values written after. Copying a material is 2–4× cheaper
    than building its node tree again, where each node, link and socket write re-runs the tree's update, and a
    model's materials mostly share one or two shapes (textured, or placeholders for missing VMTs).

    Images are set only once every material exists: Blender counts two users for each image a copied tree holds
    and takes back one when the node's image changes, so copies of trees holding images would leave counts too
    high. (On 4.5 and 5.0 a copy's embedded node tree itself reports 0 users for the session, against 1 when
    built, as any material Blender copies does; saved and reloaded, every embedded tree reports 0.)"""

    def __init__(self) -> None:
        self._first: dict[_Shape, tuple[bpy.types.Material, dict[str, str]]] = {}
        self.images: list[tuple[bpy.types.Node, bpy.types.Image]] = []

    def new(self, data: MaterialData, shape: _Shape) -> tuple[bpy.types.Material, dict[str, bpy.types.Node] | None]:
        """A copy of the first material of ``shape`` and its nodes by role, or a new material and None."""
        first = self._first.get(shape)
        if first is None:
            mat = bpy.data.materials.new(data.name)
            if mat.node_tree is None:  # 4.2/4.5; 5.0 creates the tree (and deprecates use_nodes)
                mat.use_nodes = True
            return mat, None
        template, roles = first
        mat = template.copy()
        mat.name = data.name  # after the copy's own name: numbered as ``materials.new`` would number it
        for key in list(mat.keys()):
            del mat[key]
        nodes = mat.node_tree.nodes
        return mat, {role: nodes[name] for role, name in roles.items()}

    def keep(self, shape: _Shape, mat: bpy.types.Material, nodes: dict[str, bpy.types.Node]) -> None:
        self._first[shape] = (mat, {role: node.name for role, node in nodes.items()})


def build_materials(datas: list[MaterialData], images: ImageLoader) -> list[bpy.types.Material]:
    """An import's materials, in order (see :class:`_Shapes`)."""
    shapes = _Shapes()
    materials = [_build(data, images, shapes) for data in datas]
    for node, image in shapes.images:
        node.image = image
    return materials


def build_material(data: MaterialData, images: ImageLoader) -> bpy.types.Material:
    return build_materials([data], images)[0]


def _build(data: MaterialData, images: ImageLoader, shapes: _Shapes) -> bpy.types.Material:
    base = images.get(data.base_texture) if data.base_texture is not None else None
    alpha_map = images.get(data.alpha_texture) if data.alpha_texture is not None else None
    normal_map = images.get(data.normal_texture) if data.normal_texture is not None else None
    shape = _shape(data, alpha_map)
    mat, nodes = shapes.new(data, shape)
    if nodes is None:
        nodes = _make_nodes(mat.node_tree, shape)
        shapes.keep(shape, mat, nodes)
    for role, image in (("base", base), ("alpha_map", alpha_map), ("normal_map", normal_map)):
        if role in nodes:
            shapes.images.append((nodes[role], image))
    _write_values(mat, nodes, data, alpha_map, normal_map)
    return mat


class _Shape(NamedTuple):
    """What decides a material's nodes and links (:func:`_make_nodes` reads nothing else): materials with the same
    shape have the same tree, so one can be a copy of another."""

    textured: bool
    tint: bool  # Source's $color/$color2 tints the base texture
    emission_from_alpha: bool  # self-illumination masked by the base texture's alpha
    texture_alpha: bool  # the base texture's alpha is the opacity
    emissive: bool  # MilkShape's emissive modulated by the texture
    alpha_map: bool
    alpha_map_linked: bool  # a missing map leaves the surface opaque, not placeholder-grey
    opaque: bool  # opacity 1: alpha sources link straight in, without a Math node
    normal_map: bool
    clip: bool
    blend: bool  # not a node: a copy keeps its template's render method, which _write_values only sets
    additive: bool  # the texture's colour added to what lies behind (emission over a transparent surface)
    reflection: bool  # the base texture looked up by the view's reflection (GoldSrc's chrome)


def _shape(data: MaterialData, alpha_map: bpy.types.Image | None) -> _Shape:
    textured = data.base_texture is not None
    return _Shape(
        textured=textured,
        tint=textured and tuple(data.base_color) != (1.0, 1.0, 1.0) and bool(data.props.get("source_shader")),
        emission_from_alpha=textured and data.emission_from_texture_alpha,
        texture_alpha=textured and data.use_texture_alpha,
        emissive=textured and data.emission_strength > 0 and not data.emission_from_texture_alpha,
        alpha_map=alpha_map is not None,
        alpha_map_linked=alpha_map is not None and MISSING_IMAGE_PROP not in alpha_map,
        opaque=data.alpha >= 1.0,
        normal_map=data.normal_texture is not None,
        clip=data.alpha_clip is not None,
        blend=data.blend or data.additive,
        additive=textured and data.additive,
        reflection=textured and data.reflection_mapped,
    )


def _make_nodes(tree: bpy.types.NodeTree, shape: _Shape) -> dict:
    """The nodes and links of ``shape``, by role; the values that vary between materials of one shape (images,
    colours, factors, thresholds) are :func:`_write_values`' to write."""
    bsdf = next(n for n in tree.nodes if n.bl_idname == "ShaderNodeBsdfPrincipled")
    inputs = bsdf.inputs
    nodes = {"bsdf": bsdf}
    x = bsdf.location.x - 400
    layout = _Layout(tree)
    if shape.textured:
        tex = nodes["base"] = tree.nodes.new("ShaderNodeTexImage")
        tex.label = "Base Color"
        layout.put(tex, x, bsdf.location.y)
        color = tex.outputs["Color"]
        if shape.tint:
            tint = nodes["tint"] = tree.nodes.new("ShaderNodeMix")
            tint.data_type, tint.blend_type, tint.label = "RGBA", "MULTIPLY", "Tint"
            tint.inputs["Factor"].default_value = 1.0
            layout.put(tint, x + 200, bsdf.location.y + 150)
            tree.links.new(color, tint.inputs[6])
            color = tint.outputs[2]
        tree.links.new(color, inputs["Base Color"])
        if shape.emission_from_alpha:
            tree.links.new(tex.outputs["Color"], inputs["Emission Color"])
            tree.links.new(tex.outputs["Alpha"], inputs["Emission Strength"])
        if shape.texture_alpha:
            _link_alpha(layout, tex.outputs["Alpha"], inputs["Alpha"], shape.opaque, nodes, "base_alpha")
        if shape.emissive:
            # Fixed-function GL (what MilkShape shows) modulates emissive by the texture; a flat emission colour
            # would wash the model out in grey.
            mul = nodes["emissive"] = tree.nodes.new("ShaderNodeVectorMath")
            mul.operation = "MULTIPLY"
            mul.label = "Emissive × Texture"
            layout.put(mul, bsdf.location.x - 200, bsdf.location.y - 500)
            tree.links.new(tex.outputs["Color"], mul.inputs[0])
            tree.links.new(mul.outputs["Vector"], inputs["Emission Color"])
    if shape.alpha_map:
        tex = nodes["alpha_map"] = tree.nodes.new("ShaderNodeTexImage")
        tex.label = "Alpha Map"
        layout.put(tex, x, bsdf.location.y - 300)
        if shape.alpha_map_linked:
            _link_alpha(layout, tex.outputs["Color"], inputs["Alpha"], shape.opaque, nodes, "map_alpha")
    if shape.normal_map:
        nodes["normal_map"] = _normal_map(layout, inputs["Normal"], (x, bsdf.location.y - 600))
    if shape.clip and inputs["Alpha"].links:
        nodes["clip"] = _clip_alpha(layout, inputs["Alpha"])
    if shape.reflection:
        coords = tree.nodes.new("ShaderNodeTexCoord")
        layout.put(coords, x - 250, bsdf.location.y)
        tree.links.new(coords.outputs["Reflection"], nodes["base"].inputs["Vector"])
    if shape.additive:
        _additive(layout, nodes["base"].outputs["Color"], bsdf)
    layout.write()
    return nodes


def _additive(layout: _Layout, color: bpy.types.NodeSocket, bsdf: bpy.types.Node) -> None:
    """What lies behind plus the texture's colour: a fully transparent surface that emits the texture (black
    adds nothing), in place of the BSDF on the material output."""
    tree = layout.tree
    output = next((n for n in tree.nodes if n.bl_idname == "ShaderNodeOutputMaterial"), None)
    if output is None:
        return
    clear = tree.nodes.new("ShaderNodeBsdfTransparent")
    glow = tree.nodes.new("ShaderNodeEmission")
    add = tree.nodes.new("ShaderNodeAddShader")
    add.label = "Additive"
    layout.put(clear, bsdf.location.x, bsdf.location.y + 300)
    layout.put(glow, bsdf.location.x, bsdf.location.y + 450)
    layout.put(add, output.location.x, output.location.y + 200)
    tree.links.new(color, glow.inputs["Color"])
    tree.links.new(clear.outputs[0], add.inputs[0])
    tree.links.new(glow.outputs[0], add.inputs[1])
    tree.links.new(add.outputs[0], output.inputs["Surface"])


def _write_values(
    mat: bpy.types.Material,
    nodes: dict[str, bpy.types.Node],
    data: MaterialData,
    alpha_map: bpy.types.Image | None,
    normal_map: bpy.types.Image | None,
) -> None:
    """What varies between materials of one shape, written over a new tree's defaults or a copy's values (images
    apart: :func:`build_materials` sets them last)."""
    inputs = nodes["bsdf"].inputs
    _set_default(inputs["Base Color"], (*data.base_color, 1.0))
    _set_default(inputs["Alpha"], data.alpha)
    _set_default(inputs["Roughness"], data.roughness)
    _set_default(inputs["Specular IOR Level"], data.specular_level)
    _set_default(inputs["Specular Tint"], (*data.specular_tint, 1.0))
    _set_default(inputs["Emission Color"], (*data.emission_color, 1.0))
    _set_default(inputs["Emission Strength"], data.emission_strength)
    mat.diffuse_color = (*data.base_color, data.alpha)  # what Solid view shows
    mat.roughness = data.roughness
    for image in (alpha_map, normal_map):
        if image is not None and MISSING_IMAGE_PROP not in image:
            image.colorspace_settings.name = "Non-Color"
    if "tint" in nodes:
        _set_default(nodes["tint"].inputs[7], (*data.base_color, 1.0))
    if "emissive" in nodes:
        _set_default(nodes["emissive"].inputs[1], tuple(data.emission_color))
    for role in ("base_alpha", "map_alpha"):
        if role in nodes:
            _set_default(nodes[role].inputs[1], data.alpha)
    if "clip" in nodes:
        _set_default(nodes["clip"].inputs[1], data.alpha_clip)
    if (data.blend or data.additive) and hasattr(mat, "surface_render_method"):
        mat.surface_render_method = "BLENDED"
    mat.use_backface_culling = not data.double_sided
    for key, value in data.props.items():
        mat[key] = value


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


def _normal_map(layout: _Layout, normal: bpy.types.NodeSocket, location: tuple[float, float]) -> bpy.types.Node:
    """A DirectX-style normal map (Source's: green points down) flipped into Blender's OpenGL convention; returns
    its image node."""
    tree = layout.tree
    tex = tree.nodes.new("ShaderNodeTexImage")
    tex.label = "Normal Map (DirectX)"
    layout.put(tex, *location)
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
    return tex


def _clip_alpha(layout: _Layout, alpha: bpy.types.NodeSocket) -> bpy.types.Node:
    """Alpha test as a hard step on the alpha input (its threshold is a value): the same cut-out in EEVEE and
    Cycles."""
    tree = layout.tree
    source = alpha.links[0].from_socket
    step = tree.nodes.new("ShaderNodeMath")
    step.operation, step.label = "GREATER_THAN", "Alpha Test"
    layout.put(step, alpha.node.location.x - 200, alpha.node.location.y - 300)
    tree.links.new(source, step.inputs[0])
    tree.links.new(step.outputs[0], alpha)
    return step


def _link_alpha(
    layout: _Layout,
    source: bpy.types.NodeSocket,
    alpha: bpy.types.NodeSocket,
    opaque: bool,
    nodes: dict[str, bpy.types.Node],
    role: str,
) -> None:
    """Texture alpha times the material's opacity (a Math node, kept as ``role``, unless the opacity is 1)."""
    tree = layout.tree
    if opaque:
        tree.links.new(source, alpha)
        return
    mul = nodes[role] = tree.nodes.new("ShaderNodeMath")
    mul.operation = "MULTIPLY"
    layout.put(mul, alpha.node.location.x - 200, alpha.node.location.y - 450)
    tree.links.new(source, mul.inputs[0])
    tree.links.new(mul.outputs[0], alpha)
