"""Switching a Source model like the game does: the active option of each body part and the skin family.

The state lives on the model's collection (custom properties written at import), so it survives saving and works
from Python (``set_body_part``, ``set_skin``, ``set_body_number``), from the operators, and from the panel in the
Object and Collection properties.
"""

from __future__ import annotations

import bpy
from bpy.props import IntProperty, StringProperty

from .animation_browser import draw_list
from .scene_builder import find_layer_collection


def model_collection(context: bpy.types.Context) -> bpy.types.Collection | None:
    """The imported Source model the active object (or collection) belongs to."""
    candidates = []
    if context.collection is not None:
        candidates.append(context.collection)
    obj = context.object
    if obj is not None:
        candidates.extend(obj.users_collection)
    parents = {c: p for p in bpy.data.collections for c in p.children}
    for coll in candidates:
        while coll is not None:
            if "source_version" in coll:
                return coll
            coll = parents.get(coll)
    return None


MODEL_MARKS = ("source_version", "ms3d_version")  # what every import stamps on its model's collection


def own_objects(model: bpy.types.Collection) -> list[bpy.types.Object]:
    """The model's objects, without those of another model imported into its collection (an import links its
    collection under the active one, so a model's ``all_objects`` may hold a second model's meshes and armature:
    a Source, GoldSrc or MilkShape one)."""
    found: dict[bpy.types.Object, None] = {}
    stack = [model]
    while stack:
        coll = stack.pop()
        found.update(dict.fromkeys(coll.objects))
        stack.extend(c for c in coll.children if not any(mark in c for mark in MODEL_MARKS))
    return list(found)


def body_parts(model: bpy.types.Collection) -> list[bpy.types.Collection]:
    return sorted((c for c in model.children if "source_bodypart" in c), key=lambda c: c["source_bodypart"])


def active_option(part: bpy.types.Collection) -> int:
    return int(part.get("source_active", 0))


def set_body_part(context: bpy.types.Context, model: bpy.types.Collection, part_index: int, option: int) -> None:
    parts = body_parts(model)
    part = parts[part_index]
    options = list(part.children)
    if not 0 <= option < len(options):
        raise ValueError(f"body part '{part.name}' has {len(options)} options; {option} does not exist")
    for i, child in enumerate(options):
        show = i == option
        child.hide_render = not show
        layer = find_layer_collection(context.view_layer.layer_collection, child)
        if layer is not None:
            layer.hide_viewport = not show
    part["source_active"] = option


def body_number(model: bpy.types.Collection) -> int:
    """The game's body number: Σ option × base (decoded as ``(body / base) % options``)."""
    return sum(active_option(p) * int(p.get("source_bodypart_base", 1)) for p in body_parts(model))


def set_body_number(context: bpy.types.Context, model: bpy.types.Collection, body: int) -> None:
    for i, part in enumerate(body_parts(model)):
        count = max(len(part.children), 1)
        set_body_part(context, model, i, (body // int(part.get("source_bodypart_base", 1))) % count)


def set_skin(model: bpy.types.Collection, family: int) -> None:
    """Swap every mesh's material slots to ``family``'s materials (slots remember their skin-table column)."""
    table = model.get("source_skins")
    if not table or not 0 <= family < len(table):
        raise ValueError(f"'{model.name}' has {len(table) if table else 0} skin families; {family} does not exist")
    row = [str(name) for name in table[family]]
    for obj in own_objects(model):
        refs = skin_refs(obj)
        for slot, ref in zip(obj.material_slots, refs, strict=False):
            name = row[ref] if 0 <= ref < len(row) else ""
            slot.material = bpy.data.materials.get(name) if name else None
    model["source_skin"] = family


def skin_refs(obj: bpy.types.Object) -> list[int]:
    """The skin-table column of each material slot, as the import stored it ([] for anything else: the property
    may have been edited by hand; file-named properties such as flex controllers live under ``flex:``)."""
    refs = obj.get("source_skin_refs")
    if obj.type != "MESH" or refs is None or isinstance(refs, str):
        return []
    try:
        return [int(r) for r in refs]
    except (TypeError, ValueError):
        return []


class _SourceModelOperator:
    """Operators on one imported Source model: named by ``model`` (its collection), or the active one's."""

    bl_options = {"REGISTER", "UNDO"}
    requires = "source_version"  # the custom property the model's collection must carry

    model: StringProperty(name="Model", description="The model's collection (default: the active object's)")  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        model = bpy.data.collections.get(self.model) if self.model else model_collection(context)
        if model is None or self.requires not in model:
            self.report(
                {"ERROR"},
                "No imported Source model found"
                if self.requires == "source_version"
                else "No imported Source model with skins found",
            )
            return {"CANCELLED"}
        try:
            self.apply(context, model)
        except (IndexError, ValueError) as exc:
            self.report({"ERROR"}, str(exc) or "no such body part")
            return {"CANCELLED"}
        return {"FINISHED"}

    def apply(self, context: bpy.types.Context, model: bpy.types.Collection) -> None:
        raise NotImplementedError


class IO_MS3D_MDL_OT_source_body_part(_SourceModelOperator, bpy.types.Operator):
    """Show one option of a Source body part and hide the others"""

    bl_idname = "io_ms3d_mdl.source_body_part"
    bl_label = "Set Body Group Option"

    body_part: IntProperty(name="Body Part", min=0)  # type: ignore[valid-type]
    option: IntProperty(name="Option", min=0)  # type: ignore[valid-type]

    def apply(self, context: bpy.types.Context, model: bpy.types.Collection) -> None:
        set_body_part(context, model, self.body_part, self.option)


class IO_MS3D_MDL_OT_source_body_number(_SourceModelOperator, bpy.types.Operator):
    """Set every body part from the game's body number"""

    bl_idname = "io_ms3d_mdl.source_body_number"
    bl_label = "Set Body Number"

    body: IntProperty(name="Body", min=0)  # type: ignore[valid-type]

    def apply(self, context: bpy.types.Context, model: bpy.types.Collection) -> None:
        set_body_number(context, model, self.body)


class IO_MS3D_MDL_OT_source_skin(_SourceModelOperator, bpy.types.Operator):
    """Show a Source model with another skin family"""

    bl_idname = "io_ms3d_mdl.source_skin"
    bl_label = "Set Skin"
    requires = "source_skins"

    family: IntProperty(name="Skin", min=0)  # type: ignore[valid-type]

    def apply(self, context: bpy.types.Context, model: bpy.types.Collection) -> None:
        set_skin(model, self.family)


def draw_switches(layout: bpy.types.UILayout, context: bpy.types.Context) -> None:
    model = model_collection(context)
    if model is None:
        return
    _draw_body_and_skins(layout, model)
    draw_list(layout, model)
    layout.operator("io_ms3d_mdl.source_decompile", icon="EXPORT").model = model.name  # decompile_button.py


def _draw_body_and_skins(layout: bpy.types.UILayout, model: bpy.types.Collection) -> None:
    layout.label(text=f"{model.name}: body {body_number(model)}", icon="OUTLINER_COLLECTION")
    for i, part in enumerate(body_parts(model)):
        if len(part.children) < 2:
            continue
        row = layout.row(align=True)
        row.label(text=part.name)
        for j, option in enumerate(part.children):
            op = row.operator(
                IO_MS3D_MDL_OT_source_body_part.bl_idname, text=option.name, depress=active_option(part) == j
            )
            op.model, op.body_part, op.option = model.name, i, j
    skins = model.get("source_skins")
    if skins and len(skins) > 1:
        row = layout.row(align=True)
        row.label(text="Skin")
        for family in range(len(skins)):
            op = row.operator(
                IO_MS3D_MDL_OT_source_skin.bl_idname,
                text=str(family),
                depress=int(model.get("source_skin", 0)) == family,
            )
            op.model, op.family = model.name, family


class _SwitchPanel:
    """Shared by the panels below. A mixin, not a registered Panel: subclassing a registered panel breaks the
    parent's registration (Blender then logs 'unable to get Python class' on every redraw and never draws it)."""

    bl_label = "Source Model"

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return model_collection(context) is not None

    def draw(self, context: bpy.types.Context) -> None:
        draw_switches(self.layout, context)


class IO_MS3D_MDL_PT_source_object(_SwitchPanel, bpy.types.Panel):
    """Object tab: any object of the model (mesh, armature, attachment or hitbox empty) finds its model."""

    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "object"


class IO_MS3D_MDL_PT_source_collection(_SwitchPanel, bpy.types.Panel):
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "collection"


class IO_MS3D_MDL_PT_source_view3d(_SwitchPanel, bpy.types.Panel):
    """The 3D Viewport sidebar (N), tab "Source": where an artist looking at the model finds the switches."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Source"


CLASSES = (
    IO_MS3D_MDL_OT_source_body_part,
    IO_MS3D_MDL_OT_source_body_number,
    IO_MS3D_MDL_OT_source_skin,
    IO_MS3D_MDL_PT_source_object,
    IO_MS3D_MDL_PT_source_collection,
    IO_MS3D_MDL_PT_source_view3d,
)
