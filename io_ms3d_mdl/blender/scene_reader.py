"""Blender objects back into a :class:`SceneData` for the writers: the mirror of :mod:`.scene_builder`.

Everything is read in bulk (``foreach_get``): meshes triangulated through their loop triangles, weights through a
temporary Geometry Nodes modifier that copies every bone's vertex group into a float attribute (Blender has no
bulk getter for vertex groups, and a loop over ``vertex.groups`` is a Python step per vertex), keys through
``keyframe_points.foreach_get``. The rig is read in its rest pose (Armature modifiers are switched off while the
meshes are evaluated), and nothing in the file is changed once the export has finished.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import bpy
import numpy as np

from ..formats.binary import columns_falling
from ..scene.ms3d.export import ExportError
from ..scene.rotations import euler_xyz_to_matrix, make_continuous, matrix_to_quaternion, rows_times
from ..scene.types import (
    ActionData,
    BoneChannels,
    BoneData,
    ClipData,
    ImageRef,
    MaterialData,
    MeshData,
    ObjectData,
    SceneData,
    SkeletonData,
    SkinData,
)
from .action_keys import KEYS_PROPERTY, read_back_digest, stored_keys
from .animation import FIND_UP_TO

WEIGHT_PREFIX = "io_ms3d_mdl_weight_"
MAX_READ_INFLUENCES = 5  # four to keep and a fifth to tell that a vertex had more
DENSE_SLOTS = 8  # up to this many groups a vertex, its weights are ranked slot by slot (else sorted)


@dataclass(frozen=True)
class ReadOptions:
    selection_only: bool = False
    apply_modifiers: bool = True
    animation: str = "ACTIVE"  # "NONE", "ACTIVE" (the armature's action) or "ALL" (every action keying it)
    output_dir: str | None = None  # texture paths inside it are written relative to it
    shape_keys: bool = False  # each mesh's shape keys (world space), as MeshData.shape_keys
    # vertex groups read as bones past the skeleton's (index len(bones) + k): a Source export's deleted bones
    extra_groups: tuple[str, ...] = ()
    # an imported action whose keys are as the import made them: its channels too (False: none, only
    # ``keys_changed``; a Source export writes such an action from the file, so it skips their conversion)
    unchanged_channels: bool = True


def read_scene(context: bpy.types.Context, options: ReadOptions = ReadOptions()) -> SceneData:
    """The meshes (and the armature they use) that the export takes, as a scene; :class:`ExportError` names the
    object when something cannot be exported."""
    meshes = [o for o in context.view_layer.objects if o.type == "MESH" and _taken(o, options)]
    if not meshes:
        raise ExportError("nothing to export: no mesh object " + ("is selected" if options.selection_only else ""))
    return read_objects(context, meshes, _armature(meshes, context, options), options)


def read_objects(
    context: bpy.types.Context,
    meshes: list[bpy.types.Object],
    armature: bpy.types.Object | None,
    options: ReadOptions = ReadOptions(),
) -> SceneData:
    """These mesh objects (visible or not) and this armature as a scene, the objects in the order given."""
    scene = SceneData(name=_scene_name(meshes, armature), props=_model_props(meshes, armature))
    bone_names: list[str] = []
    if armature is not None:
        scene.skeleton, bone_names = _skeleton(armature)
    materials: dict[str, int] = {}
    depsgraph = context.evaluated_depsgraph_get()
    groups = bone_names + [n for n in options.extra_groups if n not in bone_names]
    names = set(groups)
    weighted = any(g.name in names for obj in meshes for g in obj.vertex_groups)
    tree = _weight_tree(groups) if weighted else None  # one for every mesh
    try:
        with _rest_pose(meshes), _basis_shape(meshes if options.shape_keys else []):
            for obj in meshes:
                scene.objects.append(_object(obj, depsgraph, groups, tree, scene, materials, options))
    finally:
        if tree is not None:
            bpy.data.node_groups.remove(tree)
    if armature is not None and options.animation != "NONE":
        _animation(context, armature, scene, bone_names, options)
    return scene


def _taken(obj: bpy.types.Object, options: ReadOptions) -> bool:
    return obj.visible_get() and (obj.select_get() or not options.selection_only)


def _armature(
    meshes: list[bpy.types.Object], context: bpy.types.Context, options: ReadOptions
) -> bpy.types.Object | None:
    found: dict[str, tuple[bpy.types.Object, str]] = {}
    for obj in meshes:
        for modifier in obj.modifiers:
            if modifier.type != "ARMATURE":
                continue
            if modifier.object is None:
                raise ExportError(
                    f"object '{obj.name}': its Armature modifier '{modifier.name}' names no armature, so its "
                    "joints cannot be exported (set the armature, or remove the modifier)"
                )
            found.setdefault(modifier.object.name, (modifier.object, obj.name))
        if (
            obj.parent is not None
            and obj.parent.type == "ARMATURE"
            and not any(m.type == "ARMATURE" for m in obj.modifiers)
        ):
            found.setdefault(obj.parent.name, (obj.parent, obj.name))
    if len(found) > 1:
        (a, (_, oa)), (b, (_, ob)) = list(found.items())[:2]
        raise ExportError(
            f"objects '{oa}' and '{ob}' use different armatures ('{a}', '{b}'); MilkShape 3D holds one skeleton"
        )
    if found:
        return next(iter(found.values()))[0]
    chosen = [o for o in context.view_layer.objects if o.type == "ARMATURE" and _taken(o, options)]
    return chosen[0] if len(chosen) == 1 else None


def _scene_name(meshes: list[bpy.types.Object], armature: bpy.types.Object | None) -> str:
    return (armature or meshes[0]).name


def _model_props(meshes: list[bpy.types.Object], armature: bpy.types.Object | None) -> dict:
    """The ``ms3d_*`` values our import stored on the model's collection."""
    for obj in [*([armature] if armature else []), *meshes]:
        for collection in obj.users_collection:
            props = _props(collection)
            if props:
                return props
    return {}


def _props(owner) -> dict:
    out = {}
    for key in owner.keys():  # noqa: SIM118 (an ID's custom properties: no __iter__)
        if not key.startswith("ms3d_"):
            continue
        value = owner[key]
        if hasattr(value, "to_list"):
            value = value.to_list()
        elif hasattr(value, "to_dict"):
            value = value.to_dict()
        elif isinstance(value, (list, tuple)) or type(value).__name__ == "IDPropertyArray":
            value = [v.to_dict() if hasattr(v, "to_dict") else v for v in value]
        out[key] = value
    return out


def _skeleton(armature: bpy.types.Object) -> tuple[SkeletonData, list[str]]:
    bones = list(armature.data.bones)
    index = {b.name: i for i, b in enumerate(bones)}
    order: list[int] = []
    placed: set[int] = set()
    pending = list(range(len(bones)))
    while pending:  # parents first (a bone, not a vertex: at most the armature's bone count of steps)
        rest = []
        for i in pending:
            parent = bones[i].parent
            if parent is None or index[parent.name] in placed:
                order.append(i)
                placed.add(i)
            else:
                rest.append(i)
        pending = rest
    new_index = {i: n for n, i in enumerate(order)}
    world = np.array(armature.matrix_world, dtype=np.float64)
    scale = uniform_scale(world)
    data = []
    for i in order:
        bone = bones[i]
        color = None
        if bone.color.palette == "CUSTOM":
            color = tuple(float(c) for c in bone.color.custom.normal)
        data.append(
            BoneData(
                name=bone.name,
                parent=new_index[index[bone.parent.name]] if bone.parent is not None else -1,
                matrix=world @ np.array(bone.matrix_local, dtype=np.float64),
                length=float(bone.length) * scale,
                color=color,
                props=_props(bone),
            )
        )
    return SkeletonData(armature.data.name, data), [bones[i].name for i in order]


def uniform_scale(matrix: np.ndarray) -> float:
    """The object's scale as one factor (the cube root of its volume change; 1 for a flat one): what the reader
    multiplies location keys by, and what the Source export divides them by again."""
    return float(np.cbrt(abs(np.linalg.det(matrix[:3, :3])))) or 1.0


@contextmanager
def _rest_pose(meshes: list[bpy.types.Object]) -> Iterator[None]:
    """Armature modifiers off while the meshes are read, so vertices come in the rig's rest pose."""
    switched = []
    try:
        for obj in meshes:
            for modifier in obj.modifiers:
                if modifier.type == "ARMATURE" and modifier.show_viewport:
                    modifier.show_viewport = False
                    switched.append(modifier)
        yield
    finally:
        for modifier in switched:
            modifier.show_viewport = True


@contextmanager
def _basis_shape(meshes: list[bpy.types.Object]) -> Iterator[None]:
    """Each mesh in its basis shape while it is read (keys driven away from 0 would move it), when its shape keys
    are read as well: they are relative to that basis."""
    kept = []
    try:
        for obj in meshes:
            if obj.data.shape_keys is not None:
                kept.append((obj, obj.show_only_shape_key, obj.active_shape_key_index))
                obj.show_only_shape_key = True
                obj.active_shape_key_index = 0
        yield
    finally:
        for obj, only, index in kept:
            obj.show_only_shape_key = only
            obj.active_shape_key_index = index


def _object(
    obj: bpy.types.Object,
    depsgraph: bpy.types.Depsgraph,
    bone_names: list[str],
    tree: bpy.types.NodeTree | None,
    scene: SceneData,
    materials: dict[str, int],
    options: ReadOptions,
) -> ObjectData:
    index = {name: i for i, name in enumerate(bone_names)}
    bones = sorted({index[g.name] for g in obj.vertex_groups if g.name in index})  # bones it has groups for
    with _evaluated_mesh(obj, depsgraph, tree if bones else None, options) as me:
        mesh, skin = _mesh(obj, me, bones)
        if options.shape_keys:
            mesh.shape_keys = _shape_keys(obj, len(mesh.positions))
        slots = []
        for slot in obj.material_slots:
            mat = slot.material
            if mat is None:
                slots.append(None)
                continue
            if mat.name not in materials:
                materials[mat.name] = len(scene.materials)
                scene.materials.append(_material(mat, options))
            slots.append(materials[mat.name])
        mesh.materials = slots
    return ObjectData(obj.name, mesh, _props(obj), skin=skin)


@contextmanager
def _evaluated_mesh(
    obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, tree: bpy.types.NodeTree | None, options: ReadOptions
) -> Iterator[bpy.types.Mesh]:
    """The object's mesh as the export sees it (modifiers applied or not), with each bone's weights copied into a
    float attribute by a temporary Geometry Nodes modifier (``tree``); the modifier is removed afterwards."""
    switched, modifier = [], None
    try:
        if not options.apply_modifiers:
            for m in obj.modifiers:
                if m.show_viewport:
                    m.show_viewport = False
                    switched.append(m)
        if tree is not None:
            modifier = obj.modifiers.new("io_ms3d_mdl weights", "NODES")
            modifier.node_group = tree
        depsgraph.update()
        evaluated = obj.evaluated_get(depsgraph)
        if modifier is not None and not obj.data.is_editmode:
            # The weight modifier is last, so the evaluated mesh is a plain one (no edit mesh's, no GPU
            # subdivision's), the very one ``to_mesh`` copies: read in place. A copy shares its arrays, and Blender
            # un-shares an attribute (a fresh copy of it) on each read: 8 MB for 64 bones' weights, 6 ms in all.
            yield evaluated.data
            return
        me = evaluated.to_mesh()
        try:
            yield me
        finally:
            evaluated.to_mesh_clear()
    finally:
        if modifier is not None:
            obj.modifiers.remove(modifier)
        for m in switched:
            m.show_viewport = True


def _weight_tree(names: list[str]) -> bpy.types.NodeTree:
    """Geometry Nodes that copy vertex group ``names[i]`` into the float attribute ``WEIGHT_PREFIX + str(i)``, for
    every bone in one repeat zone. The names sit in one string, each padded to the longest with a character none
    of them has; turn ``i`` slices its name out and drops the padding. The tree has the same dozen nodes whatever
    the bone count, each set once: an Index Switch of the names (an item and a value a bone) cost 7–17 ms of a
    64-bone export to build, as every item redeclares the node's sockets; a pair of nodes a bone, 60 ms. The zone
    counts its own turns (4.2's Repeat Input has no Iteration output)."""
    pad = next(c for c in map(chr, range(1, 0x10000)) if all(c not in n for n in names))
    width = max((len(n) for n in names), default=0)
    tree = bpy.data.node_groups.new("io_ms3d_mdl weights", "GeometryNodeTree")
    tree.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes = tree.nodes

    def link(a, b):  # without the per-link check of socket limits (a chain cannot exceed them)
        tree.links.new(a, b, verify_limits=False)

    def node(kind: str, **values):
        made = nodes.new(kind)
        for name, value in values.items():
            setattr(made, name, value)
        return made

    start, end = nodes.new("GeometryNodeRepeatInput"), nodes.new("GeometryNodeRepeatOutput")
    start.pair_with_output(end)
    end.repeat_items.new("INT", "Index")
    start.inputs["Iterations"].default_value = len(names)
    turn = start.outputs["Index"]
    step = node("ShaderNodeMath", operation="ADD")  # Index + 1 for the next turn
    step.inputs[1].default_value = 1.0
    offset = node("ShaderNodeMath", operation="MULTIPLY")  # where name `turn` starts
    offset.inputs[1].default_value = float(width)
    every = node("FunctionNodeInputString", string="".join(n.ljust(width, pad) for n in names))
    cut = nodes.new("FunctionNodeSliceString")
    cut.inputs["Length"].default_value = width
    unpad = nodes.new("FunctionNodeReplaceString")
    unpad.inputs["Find"].default_value = pad
    read = nodes.new("GeometryNodeInputNamedAttribute")  # (float, on points: a vertex group's weights)
    store = nodes.new("GeometryNodeStoreNamedAttribute")
    prefix = node("FunctionNodeInputString", string=WEIGHT_PREFIX)
    number = nodes.new("FunctionNodeValueToString")  # (0 decimals: "12")
    target = nodes.new("GeometryNodeStringJoin")
    link(nodes.new("NodeGroupInput").outputs[0], start.inputs["Geometry"])
    link(turn, step.inputs[0])
    link(step.outputs[0], end.inputs["Index"])
    link(turn, offset.inputs[0])
    link(every.outputs[0], cut.inputs["String"])
    link(offset.outputs[0], cut.inputs["Position"])
    link(cut.outputs[0], unpad.inputs["String"])
    link(unpad.outputs[0], read.inputs["Name"])
    link(turn, number.inputs[0])
    link(number.outputs[0], target.inputs["Strings"])  # (a multi-input takes the last link first)
    link(prefix.outputs[0], target.inputs["Strings"])
    link(start.outputs["Geometry"], store.inputs[0])
    link(read.outputs[0], store.inputs["Value"])
    link(target.outputs[0], store.inputs["Name"])
    link(store.outputs[0], end.inputs["Geometry"])
    link(end.outputs["Geometry"], nodes.new("NodeGroupOutput").inputs[0])
    return tree


def _get(collection, attr: str, count: int, dtype, width: int = 1) -> np.ndarray:
    out = np.empty(count * width, dtype=dtype)
    collection.foreach_get(attr, out)
    return out.reshape(-1, width) if width > 1 else out


def _mesh(obj: bpy.types.Object, me: bpy.types.Mesh, bones: list[int]) -> tuple[MeshData, SkinData | None]:
    world = np.array(obj.matrix_world, dtype=np.float64)
    nv = len(me.vertices)
    local = _get(me.attributes["position"].data, "vector", nv, np.float32, 3)
    placed = not np.array_equal(world, np.eye(4))  # (else the float32 values as they are)
    positions = (rows_times(local, world[:3, :3].T) + world[:3, 3]).astype(np.float32) if placed else local
    # Attribute arrays where Blender has them: contiguous copies, 50-100x faster than the struct collections.
    if not len(me.polygons):  # (points or edges only: no corner attributes at all)
        return MeshData(name=obj.name, positions=positions, triangles=np.zeros((0, 3), np.int32)), None
    corner_verts = _get(me.attributes[".corner_vert"].data, "value", len(me.loops), np.int32)
    loops, polygon = _triangles(me, local, corner_verts)
    nt = len(polygon)
    if np.linalg.det(world[:3, :3]) < 0:  # a mirrored object: its faces turn inside out in world space
        loops = loops[:, ::-1]
    loops = np.ascontiguousarray(loops).ravel()
    tris = corner_verts[loops].reshape(-1, 3)
    # (np.take gathers rows 4-5x faster than indexing with an array)
    normals = np.take(_get(me.corner_normals, "vector", len(me.loops), np.float32, 3), loops, axis=0)
    if placed:
        if np.linalg.matrix_rank(world[:3, :3]) < 3:
            raise ExportError(
                f"object '{obj.name}': its transform flattens it (a scale of 0 on some axis), so its normals have "
                "no direction; give it a scale other than 0"
            )
        normals = rows_times(normals, np.linalg.inv(world[:3, :3]))
        length = np.linalg.norm(normals, axis=1, keepdims=True)
        normals = np.divide(normals, length, out=np.zeros_like(normals), where=length > 0).astype(np.float32)
    uvs = None
    if me.uv_layers.active is not None:
        layer = me.attributes.get(me.uv_layers.active.name)
        source = layer.data if layer is not None else me.uv_layers.active.data
        uvs = np.take(
            _get(source, "vector" if layer is not None else "uv", len(me.loops), np.float32, 2), loops, axis=0
        )
    material = np.zeros(nt, np.int32)
    if "material_index" in me.attributes:
        faces = _get(me.attributes["material_index"].data, "value", len(me.polygons), np.int32)
        material = faces[polygon]
    mesh = MeshData(
        name=obj.name,
        positions=positions,
        triangles=tris,
        uvs=uvs,
        normals=normals,
        material_indices=material,
        sharp_edges=_sharp_edges(me),
    )
    return mesh, _skin(me, bones, nv)


def _triangles(me: bpy.types.Mesh, positions: np.ndarray, corner_verts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The mesh's loop triangles, (T, 3) corners and (T,) faces, as Blender makes them. Reading them is a struct
    collection's slow copy (5.6-6.7 ms for 64,800 triangles); triangles and quads are made here instead (2.5 ms), by
    Blender's own rule (``mesh_tessellate.cc``): a face's triangles follow each other in face order, a quad is
    cut along corners 0-2 unless its first and third corners make it fold (then along 1-3). The fold test is
    done in float64; a quad too close to the line for float32 to be sure, or any larger face, and the triangles
    are read from Blender."""
    me.calc_loop_triangles()
    polygon = _get(me.loop_triangle_polygons, "value", len(me.loop_triangles), np.int32)
    sizes = np.bincount(polygon, minlength=len(me.polygons)) + 2
    if not len(polygon) or sizes.max() > 4:
        return _get(me.loop_triangles, "loops", len(polygon), np.int32, 3), polygon
    # Column by column ((3, T) and (3, quads) arrays): numpy steps along rows of 3 or 4 numbers 10-20x slower.
    starts = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    first_tri = starts - 2 * np.arange(len(sizes))
    start = starts[polygon]
    second = np.arange(len(polygon)) - first_tri[polygon]  # 1: a quad's second triangle
    loops = np.stack([start, start + 1 + second, start + 2 + second])  # (0, 1, 2), a quad's second (0, 2, 3)
    quads = np.flatnonzero(sizes == 4)
    if len(quads):
        x, y, z = np.ascontiguousarray(positions.T, dtype=np.float64)
        corners = [corner_verts[starts[quads] + k] for k in range(4)]
        v0, v1, v2, v3 = ((x[i], y[i], z[i]) for i in corners)  # each corner's coordinates, one array each
        a, b, c = ([p - o for p, o in zip(v, v0, strict=True)] for v in (v1, v2, v3))

        def dot(u, w):
            return u[0] * w[0] + u[1] * w[1] + u[2] * w[2]

        bb = dot(b, b)
        fold = dot(a, c) * bb - dot(a, b) * dot(b, c)  # (a×b)·(c×b), Blender's fold test, in float64
        # float32's rounding moves it by less than 1e-5 of |a|·|b|²·|c|: sure beyond 1e-4 of it
        if not (fold * fold > 1e-8 * dot(a, a) * dot(c, c) * bb * bb).all():
            return _get(me.loop_triangles, "loops", len(polygon), np.int32, 3), polygon
        folded = quads[fold > 0]
        tri = first_tri[folded]
        loops[:, tri] = starts[folded] + np.array([[0], [1], [3]])
        loops[:, tri + 1] = starts[folded] + np.array([[1], [2], [3]])
    return loops.T, polygon


def _shape_keys(obj: bpy.types.Object, nv: int) -> list[tuple[str, np.ndarray]]:
    """The object's shape keys after its basis, in world space like its mesh; they describe the mesh without
    modifiers, so a modifier that changes the vertex count cannot be exported with them."""
    keys = obj.data.shape_keys
    if keys is None or len(keys.key_blocks) < 2:
        return []
    blocks = list(keys.key_blocks)[1:]
    if len(obj.data.vertices) != nv:
        raise ExportError(
            f"'{obj.name}': its modifiers change the vertex count ({len(obj.data.vertices)} -> {nv}), so its shape "
            "keys cannot be exported; apply or remove the modifiers"
        )
    world = np.array(obj.matrix_world, dtype=np.float64)
    out = []
    for block in blocks:
        co = _get(block.data, "co", nv, np.float32, 3).astype(np.float64)
        out.append((block.name, (rows_times(co, world[:3, :3].T) + world[:3, 3]).astype(np.float32)))
    return out


def _sharp_edges(me: bpy.types.Mesh) -> np.ndarray:
    """Edges marked sharp, and every edge of a flat-shaded face."""
    ne = len(me.edges)
    if ne == 0:
        return np.zeros((0, 2), np.int32)
    pairs = _get(me.attributes[".edge_verts"].data, "value", ne, np.int32, 2)
    sharp = np.zeros(ne, dtype=bool)
    if "sharp_edge" in me.attributes:
        sharp |= _get(me.attributes["sharp_edge"].data, "value", ne, bool)
    if "sharp_face" in me.attributes:
        flat = _get(me.attributes["sharp_face"].data, "value", len(me.polygons), bool)
        if flat.any():
            totals = _get(me.polygons, "loop_total", len(me.polygons), np.int32)
            corner_edges = _get(me.attributes[".corner_edge"].data, "value", len(me.loops), np.int32)
            flat_corner = np.repeat(flat, totals)
            sharp[corner_edges[flat_corner]] = True
    return pairs[sharp]


def _skin(me: bpy.types.Mesh, bones: list[int], nv: int) -> SkinData | None:
    """Each vertex's largest few weights, from the float attributes the weight tree made: each bone's read into one
    reused column and only its positive weights kept (a dense bones x vertices array, 8 MB for 64 bones, cost more
    in fresh memory and in scanning it than the rest of the work)."""
    if not bones or nv == 0:
        return None
    column = np.empty(nv, dtype=np.float32)
    slots = _Slots(nv, np.array(bones, dtype=np.int32))
    for row, bone in enumerate(bones):
        attribute = me.attributes.get(f"{WEIGHT_PREFIX}{bone}")
        if attribute is None:
            continue
        attribute.data.foreach_get("value", column)
        hit = np.flatnonzero(column > 0)
        slots.add(row, hit, column[hit])
    return slots.top()


def top_weights(
    rows: np.ndarray, vertices: np.ndarray, values: np.ndarray, bone_of_row: np.ndarray, nv: int
) -> SkinData | None:
    """Each vertex's ``MAX_READ_INFLUENCES`` largest weights of the positive float32 ``values`` at (``rows``,
    ``vertices``), given in row order (each vertex once a row); the larger first, equal ones in row order, as ids
    ``bone_of_row[row]`` (-1 where there are fewer)."""
    slots = _Slots(nv, bone_of_row)
    bounds = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1], True]) if len(rows) else np.zeros(1, np.int64)
    for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):  # (a row a bone)
        slots.add(int(rows[start]), vertices[start:end], values[start:end])
    return slots.top()


class _Slots:
    """Rows of weights (a bone's, row by row, in bone order) gathered into each vertex's slots, the k-th weight a
    vertex gets in slot k: (slots, vertices) arrays, so that ranking a vertex's few weights is a handful of
    whole-array steps, not a sort of every entry. A vertex in more than ``DENSE_SLOTS`` groups turns it into one
    sort of them all (:func:`_top_by_sort`). The result's arrays are (vertices, slots) views of (slots,
    vertices) ones, the layout the MilkShape export works in."""

    def __init__(self, nv: int, bone_of_row: np.ndarray) -> None:
        self.nv, self.bone_of_row = nv, bone_of_row
        self.count = np.zeros(nv, dtype=np.int32)  # weights so far, each vertex
        self.weights = np.zeros((0, nv), dtype=np.float32)
        self.ids = np.full((0, nv), -1, dtype=np.int32)
        self.rows: list[tuple[int, np.ndarray, np.ndarray]] = []  # kept for the sort, should it be needed
        self.sorted = False

    def add(self, row: int, vertices: np.ndarray, values: np.ndarray) -> None:
        """One row's positive weights (``vertices`` ascending, each once)."""
        if not len(vertices):
            return
        self.rows.append((row, vertices, values))
        if self.sorted:
            return
        place = self.count[vertices]
        deepest = int(place.max())
        if deepest >= DENSE_SLOTS:
            self.sorted = True
            return
        if deepest >= len(self.weights):  # (a few times at most: once a slot)
            more = max(deepest + 1, 2 * len(self.weights))
            self.weights = np.concatenate([self.weights, np.zeros((more - len(self.weights), self.nv), np.float32)])
            self.ids = np.concatenate([self.ids, np.full((more - len(self.ids), self.nv), -1, np.int32)])
        at = place * self.nv + vertices  # (flat indices, in C order)
        np.put(self.weights, at, values)
        np.put(self.ids, at, self.bone_of_row[row])
        self.count[vertices] = place + 1

    def top(self) -> SkinData | None:
        if not self.rows:
            return None
        if self.sorted:
            rows = np.concatenate([np.full(len(v), r, dtype=np.int64) for r, v, _ in self.rows])
            vertices, values = (np.concatenate([part[k] for part in self.rows]) for k in (1, 2))
            return _top_by_sort(rows, vertices, values, self.bone_of_row, self.nv)
        most = int(self.count.max())
        slots, ids, nv = self.weights[:most], self.ids[:most], self.nv
        keep = min(most, MAX_READ_INFLUENCES)
        top_ids = np.full((MAX_READ_INFLUENCES, nv), -1, dtype=np.int32)
        top = np.zeros((MAX_READ_INFLUENCES, nv), dtype=np.float32)
        if columns_falling(slots):  # (in order already: painted largest first, or one group a vertex)
            top_ids[:keep], top[:keep] = ids[:keep], slots[:keep]
            return SkinData(top_ids.T, top.T)
        # Each slot's place in falling order (equal: the earlier slot first; the zeros after every weight).
        rank = np.zeros((most, nv), dtype=np.int8)
        for i in range(most):
            for j in range(i + 1, most):
                j_first = slots[j] > slots[i]
                rank[i] += j_first
                rank[j] += ~j_first
        column = np.arange(nv)
        for i in range(most):
            to, at, of = rank[i], column, slice(None)
            if most > keep:  # (a slot ranked past the kept ones is dropped)
                of = to < keep
                to, at = to[of], column[of]
            top_ids[to, at] = ids[i][of]
            top[to, at] = slots[i][of]
        return SkinData(top_ids.T, top.T)


def _top_by_sort(
    rows: np.ndarray, vertices: np.ndarray, values: np.ndarray, bone_of_row: np.ndarray, nv: int
) -> SkinData:
    """:func:`top_weights` for vertices in many groups: one stable sort of one integer key, vertex then falling
    weight (a positive float's bits sort as the float does)."""
    bits = values.astype(np.float32).view(np.int32).astype(np.int64)  # (0, 0x7F800000]: +inf at most
    order = np.argsort((vertices.astype(np.int64) << 31) | (0x7FFFFFFF - bits), kind="stable")
    rows, vertices, values = rows[order], vertices[order], bits[order].astype(np.int32).view(np.float32)
    first = np.flatnonzero(np.r_[True, vertices[1:] != vertices[:-1]])  # each vertex's first entry
    rank = np.arange(len(vertices)) - np.repeat(first, np.diff(np.r_[first, len(vertices)]))
    keep = rank < MAX_READ_INFLUENCES
    slot = vertices[keep] * MAX_READ_INFLUENCES + rank[keep]
    ids = np.full(nv * MAX_READ_INFLUENCES, -1, dtype=np.int32)
    top = np.zeros(nv * MAX_READ_INFLUENCES, dtype=np.float32)
    ids[slot] = bone_of_row[rows[keep]]
    top[slot] = values[keep]
    return SkinData(ids.reshape(nv, -1), top.reshape(nv, -1))


def _material(mat: bpy.types.Material, options: ReadOptions) -> MaterialData:
    """The Principled BSDF's values (or the viewport colour without nodes) and the images feeding it."""
    props = _props(mat)
    data = MaterialData(
        name=mat.name, base_color=tuple(mat.diffuse_color[:3]), alpha=float(mat.diffuse_color[3]), props=props
    )
    data.roughness = float(mat.roughness)
    tree = mat.node_tree  # (``use_nodes`` is deprecated in 5.0, where every material has its tree)
    bsdf = next((n for n in tree.nodes if n.type == "BSDF_PRINCIPLED"), None) if tree is not None else None
    if bsdf is None:
        return data
    inputs = bsdf.inputs
    base = inputs["Base Color"]
    # Linked or not, the socket keeps the colour (our import writes it there beside its texture).
    data.base_color = tuple(float(c) for c in base.default_value[:3])
    if not inputs["Alpha"].is_linked:
        data.alpha = float(inputs["Alpha"].default_value)
    data.roughness = float(inputs["Roughness"].default_value)
    data.specular_level = float(inputs["Specular IOR Level"].default_value)
    data.specular_tint = tuple(float(c) for c in inputs["Specular Tint"].default_value[:3])
    data.emission_color = tuple(float(c) for c in inputs["Emission Color"].default_value[:3])
    data.emission_strength = float(inputs["Emission Strength"].default_value)
    base_image, _ = _upstream_image(base)
    alpha_image, alpha_output = _upstream_image(inputs["Alpha"])
    if base_image is not None:
        data.base_texture = _image_ref(base_image, options)
    if alpha_image is not None:
        if alpha_image == base_image and alpha_output == "Alpha":
            data.use_texture_alpha = True
        else:
            data.alpha_texture = _image_ref(alpha_image, options)
    return data


def _upstream_image(socket: bpy.types.NodeSocket) -> tuple[bpy.types.Image | None, str | None]:
    """The first image texture feeding ``socket`` (through any nodes), and which of its outputs."""
    seen = set()
    stack = [link for link in socket.links]
    while stack:
        link = stack.pop()
        node = link.from_node
        if node.type == "TEX_IMAGE" and node.image is not None:
            return node.image, link.from_socket.name
        if node.as_pointer() in seen:
            continue
        seen.add(node.as_pointer())
        for inp in node.inputs:
            stack.extend(inp.links)
    return None, None


def _image_ref(image: bpy.types.Image, options: ReadOptions) -> ImageRef:
    path = bpy.path.abspath(image.filepath, library=image.library) if image.filepath else ""
    name = os.path.basename(path) or image.name
    raw = name
    if path and options.output_dir:
        try:
            relative = os.path.relpath(path, options.output_dir)
        except ValueError:  # another drive
            relative = name
        if not relative.startswith(".."):
            raw = relative
    return ImageRef(raw, path or None)


# --- animation --------------------------------------------------------------------------------------------------


def _animation(
    context: bpy.types.Context,
    armature: bpy.types.Object,
    scene: SceneData,
    bone_names: list[str],
    options: ReadOptions,
) -> None:
    anim = armature.animation_data
    render = context.scene.render
    scene.fps = render.fps / render.fps_base
    scene.frame_range = (float(context.scene.frame_start), float(context.scene.frame_end))
    if options.animation == "ACTIVE":
        actions = [anim.action] if anim is not None and anim.action is not None else []
        scene.clips = _clips(armature)
    else:
        actions = [a for a in bpy.data.actions if _keys_bones(a, bone_names)]
    rotation_modes = {p.name: p.rotation_mode for p in armature.pose.bones}
    for action in actions:
        data = _action(action, armature, bone_names, rotation_modes, options.unchanged_channels)
        if data is not None:
            scene.actions.append(data)


def _clips(armature: bpy.types.Object) -> list[ClipData]:
    """The clip list our import stored on the armature (``ms3d_clips``), or an :class:`ExportError` naming it when
    it is not a list of {name, start, end, loop}."""
    clips = _props(armature).get("ms3d_clips")
    if not clips:
        return []
    try:
        out = [ClipData(str(c["name"]), float(c["start"]), float(c["end"]), bool(c["loop"])) for c in clips]
    except (TypeError, KeyError, ValueError):
        out = None
    if out is None or not np.isfinite([(c.start, c.end) for c in out]).all():
        raise ExportError(
            f"armature '{armature.name}': its custom property 'ms3d_clips' is not a list of clips (each with a name, "
            "a start and an end frame and loop); correct it, or delete the property"
        )
    return out


def _action_fcurves(action: bpy.types.Action, armature: bpy.types.Object | None = None) -> list[bpy.types.FCurve]:
    """The action's curves on every Blender: 4.4+ keep them in channelbags per slot (5.0 has nothing else)."""
    return [curve for curve, _ in _curves_and_finders(action, armature)]


def _curves_and_finders(
    action: bpy.types.Action, armature: bpy.types.Object | None = None
) -> list[tuple[bpy.types.FCurve, Callable | None]]:
    """Each curve of the action (:func:`_action_fcurves`) with its channelbag's ``find`` (None on 4.2's legacy
    list). From 4.5 a curve reached by walking its channelbag reads its keys six times slower (about 120 ns a key
    in ``foreach_get`` against 20, ``scripts/bench_rna_calls.py``) than the one ``find`` returns: :func:`_keys`
    looks a long curve up again (a scan in C costing what about 30 keys do)."""
    if not hasattr(action, "layers"):
        return [(curve, None) for curve in action.fcurves]
    slot = None
    anim = armature.animation_data if armature is not None else None
    if anim is not None and anim.action == action:
        slot = anim.action_slot
    curves = []
    for layer in action.layers:
        for strip in layer.strips:
            for bag in strip.channelbags:
                if slot is None or bag.slot == slot:
                    listed = bag.fcurves
                    find = listed.find if len(listed) <= FIND_UP_TO else None
                    curves.extend((curve, find) for curve in listed)
    return curves


FIND_FROM_KEYS = 32  # keys from which a walked curve is looked up again before they are read


def _keys(fcurve: bpy.types.FCurve, find: Callable | None) -> np.ndarray:
    """(K, 2) float32 frames and values of a curve, read through the curve ``find`` gives for a long one (when it
    is this curve: a script may give two curves one path and index, and ``find`` returns the first)."""
    points = fcurve.keyframe_points
    count = len(points)
    if find is not None and count >= FIND_FROM_KEYS:
        found = find(fcurve.data_path, index=fcurve.array_index)
        if found == fcurve:  # (the same curve: the comparison is of the pointers)
            points = found.keyframe_points
    return _get(points, "co", count, np.float32, 2)


def _keys_bones(action: bpy.types.Action, bone_names: list[str]) -> bool:
    names = set(bone_names)
    return any(_bone_of(c.data_path)[0] in names for c in _action_fcurves(action))


def _bone_of(path: str) -> tuple[str | None, str]:
    if not path.startswith('pose.bones["'):
        return None, ""
    end = path.rfind('"]')
    name = path[len('pose.bones["') : end].replace('\\"', '"').replace("\\\\", "\\")
    return name, path[end + 3 :]


def _action(
    action: bpy.types.Action,
    armature: bpy.types.Object,
    bone_names: list[str],
    rotation_modes: dict[str, str],
    unchanged_channels: bool = True,
) -> ActionData | None:
    index = {n: i for i, n in enumerate(bone_names)}
    stamped = KEYS_PROPERTY in action
    read: list[tuple[str, int, tuple[str, str] | None, np.ndarray]] = []  # path, index, (bone, property), keys
    for fcurve, find in _curves_and_finders(action, armature):
        path = fcurve.data_path
        bone, prop = _bone_of(path)
        pose = (bone, prop) if bone in index and prop in _POSE_PATHS else None
        if pose is None and not stamped:  # (an import's action: every curve is read, for the fingerprint)
            continue
        keys = _keys(fcurve, find)
        read.append((path, fcurve.array_index, pose, keys))
    changed = read_back_digest([(p, i, k) for p, i, _, k in read]) != stored_keys(action) if stamped else None
    start, end = (float(f) for f in action.frame_range)
    if changed is False and not unchanged_channels:
        return ActionData(action.name, [], (start, end), props=_props(action), keys_changed=False)
    curves: dict[tuple[str, str], dict[int, np.ndarray]] = {}
    for _, array_index, pose, keys in read:
        if pose is not None and len(keys):
            curves.setdefault(pose, {})[array_index] = keys.astype(np.float64)
    channels = []
    scale = uniform_scale(np.array(armature.matrix_world, dtype=np.float64))
    for bone in bone_names:
        mode = rotation_modes.get(bone, "QUATERNION")
        if mode == "QUATERNION":
            rot_frames, quats = _sampled(curves.get((bone, "rotation_quaternion")), 4, (1.0, 0.0, 0.0, 0.0))
        elif mode == "AXIS_ANGLE":
            rot_frames, quats = np.zeros(0), np.zeros((0, 4))
        else:
            rot_frames, angles = _sampled(curves.get((bone, "rotation_euler")), 3, (0.0, 0.0, 0.0))
            quats = matrix_to_quaternion(_euler_matrix(angles, mode)) if len(angles) else np.zeros((0, 4))
        loc_frames, locations = _sampled(curves.get((bone, "location")), 3, (0.0, 0.0, 0.0))
        if not len(rot_frames) and not len(loc_frames):
            continue
        if len(quats):
            quats = make_continuous(quats / np.linalg.norm(quats, axis=1, keepdims=True))
        channels.append(BoneChannels(index[bone], rot_frames, quats, loc_frames, locations * scale))
    if not channels:
        return None
    return ActionData(action.name, channels, (start, end), props=_props(action), keys_changed=changed)


_POSE_PATHS = ("rotation_quaternion", "rotation_euler", "location")


def _sampled(components: dict[int, np.ndarray] | None, width: int, rest: tuple) -> tuple[np.ndarray, np.ndarray]:
    """One channel's keys: the union of its curves' key frames, each curve's value there (its own keys where it
    has them, else linear between them; a curve that is missing holds the rest value)."""
    if not components:
        return np.zeros(0), np.zeros((0, width))
    first = next(iter(components.values()))[:, 0]
    together = len(components) == width and all(np.array_equal(c[:, 0], first) for c in components.values())
    if together and (len(first) < 2 or (first[1:] > first[:-1]).all()):  # keyed together, in order: usually
        return first, np.stack([components[i][:, 1] for i in range(width)], axis=1)
    frames = np.unique(np.concatenate([c[:, 0] for c in components.values()]))
    values = np.empty((len(frames), width))
    for i in range(width):
        keys = components.get(i)
        if keys is None:
            values[:, i] = rest[i]
        else:
            order = np.argsort(keys[:, 0], kind="stable")
            values[:, i] = np.interp(frames, keys[order, 0], keys[order, 1])
    return frames, values


def _euler_matrix(angles: np.ndarray, order: str) -> np.ndarray:
    """Blender's Euler modes: 'XYZ' applies X first (R = Rz·Ry·Rx), and so on for each order."""
    if order == "XYZ":
        return euler_xyz_to_matrix(angles)
    matrices = {}
    for axis in range(3):
        single = np.zeros_like(angles)
        single[:, axis] = angles[:, axis]
        matrices["XYZ"[axis]] = euler_xyz_to_matrix(single)
    return matrices[order[2]] @ matrices[order[1]] @ matrices[order[0]]
