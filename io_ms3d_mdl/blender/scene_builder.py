"""Turn a :class:`SceneData` into Blender objects inside one new collection (with child collections for body
parts, their options, attachments and hitboxes)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import bpy
import numpy as np
from mathutils import Matrix

from ..scene.names import settle_names
from ..scene.types import CollectionData, DriverTarget, EmptyData, ObjectData, SceneData
from .animation import Limits, add_clip_markers, add_clip_strips, build_actions, set_scene_timing, stash_actions
from .animation_browser import fill as fill_animation_list
from .armature import apply_skin, build_armature
from .drivers import DriverMaker, driver_maker
from .material import ImageLoader, build_materials
from .mesh import build_mesh


def build_scene(context: bpy.types.Context, scene: SceneData) -> tuple[bpy.types.Collection, list[bpy.types.Object]]:
    """Build everything; on failure the scene's timing and markers are put back (new datablocks are the caller's
    rollback's to remove)."""
    with _scene_settings_restored_on_error(context.scene):
        return _build(context, scene)


@contextmanager
def _scene_settings_restored_on_error(scene: bpy.types.Scene) -> Iterator[None]:
    """Frame rate, range and timeline markers are no datablocks: undo changes to them by hand if a build fails."""
    render = scene.render
    before = (render.fps, render.fps_base, scene.frame_start, scene.frame_end)
    markers = {m.as_pointer() for m in scene.timeline_markers}
    try:
        yield
    except BaseException:
        for marker in [m for m in scene.timeline_markers if m.as_pointer() not in markers]:
            scene.timeline_markers.remove(marker)
        render.fps, render.fps_base, scene.frame_start, scene.frame_end = before
        raise


def _build(context: bpy.types.Context, scene: SceneData) -> tuple[bpy.types.Collection, list[bpy.types.Object]]:
    settle_names(scene)  # no two things of the import ask for one name: no ``.001`` on a fresh import
    collection = bpy.data.collections.new(scene.name)
    (context.collection or context.scene.collection).children.link(collection)
    for key, value in scene.props.items():
        collection[key] = value

    target = {}  # object index -> collection
    hidden: list[bpy.types.Collection] = []
    solids = _CollisionBuild(scene, hidden)
    for data in scene.collections:
        _build_collections(data, collection, target, hidden, solids)

    # The armature first: its edit-mode switches then have no meshes to evaluate (built after it, each is evaluated
    # once, at the end, with its weights and modifier). It takes its place after the meshes in the collection once
    # they are made.
    armature = None
    if scene.skeleton is not None:
        armature = build_armature(context, collection, scene.skeleton)
    images = ImageLoader(scene.warnings)
    materials = build_materials(scene.materials, images)
    objects, built = [], []
    for index, data in enumerate(scene.objects):
        if data.collision:
            home = target.get(index, collection)
            obj = solids.build(lambda data=data, home=home: _build_object(data, materials, home))
            if obj is None:
                continue
        else:
            obj = _build_object(data, materials, target.get(index, collection))
        objects.append(obj)
        built.append(data)
    if scene.skin_families:
        collection["source_skins"] = [[materials[t].name if t >= 0 else "" for t in f] for f in scene.skin_families]
        collection["source_skin"] = 0
        # each entry's texture (the file's name), so an export knows a material renamed since
        textures = [str(m.props.get("source_texture", "")) for m in scene.materials]
        collection["source_skin_textures"] = [[textures[t] if t >= 0 else "" for t in f] for f in scene.skin_families]

    if armature is not None:
        collection.objects.unlink(armature)
        collection.objects.link(armature)
        for data, obj in zip(built, objects, strict=True):
            if data.skin is not None:
                apply_skin(obj, data.skin, scene.skeleton, armature)
        _follow_bones(built, objects, armature)
    extras = _build_empties(scene.empties, collection, armature)
    if armature is not None:
        _build_animation(context, scene, armature)
        fill_animation_list(collection, scene.animations)
        objects.insert(0, armature)
    if scene.root_matrix is not None:  # the chosen axes turn the whole model: rig, keys and all
        turn = Matrix(scene.root_matrix.tolist()).to_4x4()
        for obj in objects + extras:
            if obj.parent is None:
                obj.matrix_world = turn @ obj.matrix_world
    # Hide the other body-group choices only now: edit mode (the armature) needs visible collections. The view
    # layer's tree is walked once (a search per choice took 73 s for 3,850 collections).
    layers = layer_collections(context.view_layer.layer_collection) if hidden else {}
    for coll in hidden:
        coll.hide_render = True
        layer = layers.get(coll.as_pointer())
        if layer is not None:
            layer.hide_viewport = True
    return collection, objects + extras


def _build_object(data: ObjectData, materials: list, collection: bpy.types.Collection) -> bpy.types.Object:
    mesh = build_mesh(data.mesh)
    try:
        for slot in data.mesh.materials:
            mesh.materials.append(materials[slot] if slot is not None else None)
        obj = bpy.data.objects.new(data.name, mesh)
    except BaseException:
        bpy.data.meshes.remove(mesh)
        raise
    try:
        for key, value in data.props.items():
            obj[key] = value
        if data.mesh.material_refs is not None:
            obj["source_skin_refs"] = list(data.mesh.material_refs)
        _shape_keys(obj, data)
        if data.display != "TEXTURED":
            obj.display_type = data.display
        collection.objects.link(obj)
    except BaseException:
        bpy.data.objects.remove(obj)
        bpy.data.meshes.remove(mesh)
        raise
    return obj


class _CollisionBuild:
    """Collision solids are extras: if Blender fails to build one, every solid and their collection are removed
    and the model imports without them, with one warning."""

    def __init__(self, scene: SceneData, hidden: list) -> None:
        self.scene, self.hidden = scene, hidden
        self.collections: list[bpy.types.Collection] = []
        self.made: list[bpy.types.Object] = []
        self.failed = False

    def build(self, make, collection: bool = False):
        """``make()``'s object (or collection), or None once building any part of the collision has failed."""
        if self.failed:
            return None
        try:
            made = make()
        except Exception as exc:
            self._give_up(exc)
            return None
        (self.collections if collection else self.made).append(made)
        return made

    def _give_up(self, exc: Exception) -> None:
        self.failed = True
        for obj in self.made:
            mesh = obj.data
            bpy.data.objects.remove(obj)
            bpy.data.meshes.remove(mesh)
        self.made.clear()
        for coll in self.collections:
            if coll in self.hidden:
                self.hidden.remove(coll)
            bpy.data.collections.remove(coll)
        self.scene.warnings.add(f"the collision model was not imported: {type(exc).__name__}: {exc}")


def _build_animation(context: bpy.types.Context, scene: SceneData, armature: bpy.types.Object) -> None:
    """Actions, clip strips, then the scene's timing and markers; values Blender cannot hold are clamped, with one
    warning."""
    limits = Limits()
    actions = build_actions(armature, scene.actions, scene.skeleton, limits)
    stash_actions(armature, actions, scene.actions, limits)
    placed = (
        add_clip_strips(armature, actions[0], scene.clips, scene.warnings, limits) if actions and scene.clips else []
    )
    # Scene-wide settings last, so a failure above leaves the scene untouched.
    if scene.fps is not None and scene.frame_range is not None:
        set_scene_timing(context.scene, scene.fps, scene.frame_range, limits)
    add_clip_markers(context.scene, placed)
    limits.report(scene.warnings)


def _shape_keys(obj: bpy.types.Object, data: ObjectData) -> None:
    """Shape keys in bulk, controller properties with their ranges, and the flex rules' drivers."""
    if not data.mesh.shape_keys:
        return
    obj.shape_key_add(name="Basis", from_mix=False)
    blocks = {}
    for name, positions in data.mesh.shape_keys:
        block = obj.shape_key_add(name=name, from_mix=False)
        block.points.foreach_set("co", np.ascontiguousarray(positions, dtype=np.float32).ravel())
        block.value = 0.0  # 5.0 starts new keys at 1
        blocks.setdefault(name, block)
    for name, (low, high) in data.controls.items():
        obj[name] = 0.0
        obj.id_properties_ui(name).update(min=low, max=high, soft_min=low, soft_max=high)
    if data.drivers:
        with driver_maker() as drivers:
            for driven, expression, variables in data.drivers:
                _driver(obj, blocks, drivers, driven, expression, variables)


def _driver(
    obj: bpy.types.Object,
    blocks: dict[str, bpy.types.ShapeKey],
    drivers: DriverMaker,
    driven: DriverTarget,
    expression: str,
    variables: dict[str, DriverTarget],
) -> None:
    """One flex rule's driver: on a shape key's value, or on a property holding a weight other rules read."""
    key = obj.data.shape_keys
    if isinstance(driven, tuple):  # ("PROP", name): a weight other rules read; unranged, so never clamped
        obj[driven[1]] = 0.0
        owner, path = obj, f'["{bpy.utils.escape_identifier(driven[1])}"]'
    elif driven in blocks:
        # The engine never clamps a flex weight; Blender clamps a key's value to its slider range (at most ±10)
        blocks[driven].slider_min, blocks[driven].slider_max = -10.0, 10.0
        owner, path = key, f'key_blocks["{bpy.utils.escape_identifier(blocks[driven].name)}"].value'
    else:
        return
    reads = []
    for var_name, target in variables.items():
        if isinstance(target, tuple):  # ("KEY", name): another shape key's value
            reads.append((var_name, key, f'key_blocks["{bpy.utils.escape_identifier(blocks[target[1]].name)}"].value'))
        else:
            reads.append((var_name, obj, f'["{bpy.utils.escape_identifier(target)}"]'))
    drivers.add(owner, path, expression, reads)


def _build_collections(
    data: CollectionData, parent: bpy.types.Collection, target: dict, hidden: list, solids: _CollisionBuild
) -> None:
    if data.collision:
        coll = solids.build(lambda: _new_collection(data, parent), collection=True)
        if coll is None:
            return
    else:
        coll = _new_collection(data, parent)
    for index in data.objects:
        target[index] = coll
    if data.hidden:
        hidden.append(coll)
    for child in data.children:
        _build_collections(child, coll, target, hidden, solids)


def _new_collection(data: CollectionData, parent: bpy.types.Collection) -> bpy.types.Collection:
    coll = bpy.data.collections.new(data.name)
    try:
        for key, value in data.props.items():
            coll[key] = value
        parent.children.link(coll)
    except BaseException:
        bpy.data.collections.remove(coll)
        raise
    return coll


def layer_collections(root: bpy.types.LayerCollection) -> dict[int, bpy.types.LayerCollection]:
    """Every layer collection below ``root``, by its collection's address, in one walk."""
    out, todo = {}, [root]
    while todo:
        layer = todo.pop()
        out[layer.collection.as_pointer()] = layer
        todo.extend(layer.children)
    return out


def find_layer_collection(
    layer: bpy.types.LayerCollection, coll: bpy.types.Collection
) -> bpy.types.LayerCollection | None:
    if layer.collection == coll:
        return layer
    for child in layer.children:
        found = find_layer_collection(child, coll)
        if found is not None:
            return found
    return None


def _follow_bones(datas: list[ObjectData], objects: list[bpy.types.Object], armature: bpy.types.Object) -> None:
    """Objects that name a bone (collision solids) follow it rigidly, where they were built in armature space."""
    for data, obj in zip(datas, objects, strict=True):
        if data.bone is not None and data.skin is None:
            _place_on_bone(obj, armature, data.bone, Matrix.Identity(4))


def _place_on_bone(obj: bpy.types.Object, armature: bpy.types.Object, bone_name: str | None, matrix: Matrix) -> None:
    """Child of the armature at ``matrix`` (armature space), following ``bone_name`` when the armature has it."""
    obj.parent = armature
    bone = armature.data.bones.get(bone_name) if bone_name is not None else None
    if bone is None:
        obj.matrix_basis = matrix
        return
    obj.parent_type = "BONE"
    obj.parent_bone = bone_name
    # A bone's children hang from its tail: express the armature-space matrix relative to that.
    tail = bone.matrix_local @ Matrix.Translation((0.0, bone.length, 0.0))
    obj.matrix_basis = tail.inverted_safe() @ matrix  # a degenerate bone (absurd sizes) must not raise


def _build_empties(
    empties: list[EmptyData], collection: bpy.types.Collection, armature: bpy.types.Object | None
) -> list[bpy.types.Object]:
    groups: dict[str, bpy.types.Collection] = {}
    out = []
    for data in empties:
        if data.collection and data.collection not in groups:
            groups[data.collection] = bpy.data.collections.new(data.collection)
            collection.children.link(groups[data.collection])
        obj = bpy.data.objects.new(data.name, None)
        obj.empty_display_type = data.display
        obj.empty_display_size = data.size
        for key, value in data.props.items():
            obj[key] = value
        groups.get(data.collection, collection).objects.link(obj)
        matrix = Matrix(data.matrix.tolist()) @ Matrix.Diagonal((*data.scale, 1.0))
        if armature is not None:
            _place_on_bone(obj, armature, data.bone, matrix)
        else:
            obj.matrix_basis = matrix
        out.append(obj)
    return out
