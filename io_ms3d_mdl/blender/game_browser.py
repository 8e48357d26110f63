"""Browse Game Models: a searchable list of the models in the mounted games and archives, imported with a click.

Blender's file browser cannot look inside a VPK or GMA, so this window lists what the mounts hold instead. The list
is a flat property collection on the window manager (session data: never saved, never undone), filled once per set
of mounts; filtering runs over plain Python lists cached beside it, so 10,000+ models stay instant. An import goes
through File > Import > Source Model's own operator with its last-used options, so both ways give the same result.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re

import bpy
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, IntProperty, PointerProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from . import game_sources, preferences
from .operator_ui import section_order
from .operators import SOURCE_SECTIONS

IMPORT_OPERATOR = "import_scene.source_mdl"
NOT_OPTIONS = frozenset({"rna_type", "filepath", "files", "directory", "filter_glob"})


class IO_MS3D_MDL_game_model(bpy.types.PropertyGroup):
    """One listed model (``name`` is its file name)."""

    path: StringProperty(name="Path")  # type: ignore[valid-type]
    game: StringProperty(name="Game")  # type: ignore[valid-type]
    folder: StringProperty(name="Folder")  # type: ignore[valid-type]
    checked: BoolProperty(name="Check", description="Import it with the others checked")  # type: ignore[valid-type]


def _game_items(catalog, context):
    return _GAME_ITEMS


_GAME_ITEMS: list[tuple[str, str, str]] = [("*", "All Games", "Models of every mounted game and archive")]


def _on_pick(cat: IO_MS3D_MDL_game_catalog, context: bpy.types.Context) -> None:
    if cat.import_on_click and 0 <= cat.index < len(cat.models):
        # A failure is reported by the operator (status bar, Info log); a click is not a script to stop.
        with contextlib.suppress(RuntimeError):
            bpy.ops.io_ms3d_mdl.import_game_models(path=cat.models[cat.index].path)


class IO_MS3D_MDL_game_catalog(bpy.types.PropertyGroup):
    models: CollectionProperty(type=IO_MS3D_MDL_game_model)  # type: ignore[valid-type]
    index: IntProperty(name="Model", default=-1, update=_on_pick)  # type: ignore[valid-type]
    search: StringProperty(  # type: ignore[valid-type]
        name="Name",
        description="Show models whose name contains this (* and ? as wildcards)",
        options={"TEXTEDIT_UPDATE"},
    )
    folder: StringProperty(  # type: ignore[valid-type]
        name="Folder", description="Show models whose folder contains this (e.g. weapons)", options={"TEXTEDIT_UPDATE"}
    )
    game: EnumProperty(name="Game", description="Show one game's or archive's models", items=_game_items)  # type: ignore[valid-type]
    import_on_click: BoolProperty(  # type: ignore[valid-type]
        name="Import on Click",
        description="A click on a model imports it; otherwise check models and Import",
        default=True,
    )
    show_options: BoolProperty(name="Import Options")  # type: ignore[valid-type]


def catalog(context: bpy.types.Context) -> IO_MS3D_MDL_game_catalog:
    return context.window_manager.io_ms3d_mdl_game_catalog


# --- filling and filtering ---------------------------------------------------------------------------------------

_STATE: dict = {"mounts": None, "names": [], "games": [], "folders": [], "filter_key": None, "flags": []}


def refresh(context: bpy.types.Context, force: bool = False) -> bool:
    """List the models of the enabled games (again if they changed or ``force``). Returns whether it refilled."""
    mounts = preferences.mounted_games(context)
    if not force and mounts == _STATE["mounts"] and len(catalog(context).models) == len(_STATE["names"]):
        return False
    rows, _STATE["note"] = game_sources.listed_models(mounts)
    fill(context, rows)
    _STATE["mounts"] = mounts
    return True


def report_note(operator: bpy.types.Operator) -> None:
    """Say why the list stops short (the listing budget), if it does."""
    if _STATE.get("note"):
        operator.report({"WARNING"}, _STATE["note"])


def fill(context: bpy.types.Context, rows: list[game_sources.ModelRow]) -> None:
    cat = catalog(context)
    cat.models.clear()
    rows = sorted(rows, key=lambda r: (r.game.lower(), r.folder.lower(), _natural(r.name)))
    models = cat.models
    for row in rows:
        item = models.add()
        item.name, item.path, item.game, item.folder = row.name, row.path, row.game, row.folder
    cat["index"] = -1  # without the update: nothing is picked
    _index(rows)
    games = sorted({r.game for r in rows}, key=str.lower)
    _GAME_ITEMS[1:] = [(g, g, f"Only the models of {g}") for g in games]
    if cat.game not in {"*", *games}:
        cat.game = "*"


def _natural(name: str) -> str:
    """Sort key putting ``knife_2`` before ``knife_10``, as Blender's file browser does (numbers zero-padded)."""
    return _DIGITS.sub(_padded, name.lower())


def _padded(match: re.Match) -> str:
    return match.group().zfill(12)


_DIGITS = re.compile(r"\d+")


def _index(rows) -> None:
    _STATE["names"] = [r.name.lower() for r in rows]
    _STATE["games"] = [r.game for r in rows]
    _STATE["folders"] = [r.folder.lower() for r in rows]
    _STATE["filter_key"] = None


def shown(cat: IO_MS3D_MDL_game_catalog) -> list[bool]:
    """Which models pass the filters (cached: a redraw does not re-filter an unchanged list)."""
    if len(_STATE["names"]) != len(cat.models):  # filled before a reload of the add-on: index the collection again
        _index([game_sources.ModelRow(m.path, m.game, m.folder) for m in cat.models])
    key = (id(_STATE["names"]), cat.search.lower(), cat.game, cat.folder.lower())
    if key != _STATE["filter_key"]:
        _STATE["flags"] = _filter(*key[1:])
        _STATE["filter_key"] = key
    return _STATE["flags"]


def _filter(search: str, game: str, folder: str) -> list[bool]:
    names, games, folders = _STATE["names"], _STATE["games"], _STATE["folders"]
    keep = [True] * len(names)
    if search:
        if any(c in search for c in "*?["):
            keep = [bool(fnmatch.fnmatchcase(n, search)) for n in names]
        else:
            keep = [search in n for n in names]
    if game and game != "*":
        keep = [k and g == game for k, g in zip(keep, games, strict=True)]
    if folder:
        keep = [k and folder in f for k, f in zip(keep, folders, strict=True)]
    return keep


class IO_MS3D_MDL_UL_game_models(bpy.types.UIList):
    """Name, folder and game of each model; the filters are the catalog's own fields, drawn above the list."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_property, index=0, flt_flag=0):
        row = layout.row(align=True)
        row.prop(item, "checked", text="")
        if context.region is not None and context.region.type == "UI":  # the narrow sidebar: the name only
            row.label(text=item.name, icon="MESH_ICOSPHERE")
            return
        split = row.split(factor=0.4, align=True)
        split.label(text=item.name, icon="MESH_ICOSPHERE")
        split = split.split(factor=0.62, align=True)
        split.label(text=item.folder)
        split.label(text=item.game)

    def draw_filter(self, context, layout):
        pass  # the catalog's search, game and folder fields replace the list's own filter

    def filter_items(self, context, data, propname):
        return filter_flags(data), []


SHOWN = 1 << 30  # UIList.bitflag_filter_item (an instance's property; the same value in every version)


def filter_flags(cat: IO_MS3D_MDL_game_catalog) -> list[int]:
    """The flags UIList.filter_items returns: shown or not, in the collection's order (no sorting)."""
    return [SHOWN if keep else 0 for keep in shown(cat)]


# --- importing ---------------------------------------------------------------------------------------------------


def import_options(context: bpy.types.Context) -> dict:
    """File > Import > Source Model's last-used options (what its file browser shows), as keyword arguments."""
    last = context.window_manager.operator_properties_last(IMPORT_OPERATOR)
    if last is None:
        return {}
    return {
        p.identifier: getattr(last, p.identifier) for p in last.bl_rna.properties if p.identifier not in NOT_OPTIONS
    }


def import_models(context: bpy.types.Context, paths: list[str]) -> set[str]:
    """Import ``paths`` (files or archive entries) in one call of the Source import operator: one undo step, one
    report. Raises RuntimeError with the operator's message when none imported."""
    if not paths:
        return {"CANCELLED"}
    try:
        directory = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    except ValueError:  # different drives: one call each
        return set().union(*(import_models(context, [p]) for p in paths))
    if directory in paths:  # one path, or a path inside another (a file and nothing else)
        directory = os.path.dirname(directory)
    files = [{"name": os.path.relpath(p, directory)} for p in paths]
    operator = bpy.ops.import_scene.source_mdl
    return operator("EXEC_DEFAULT", directory=directory, files=files, **import_options(context))


def checked_paths(context: bpy.types.Context) -> list[str]:
    return [m.path for m in catalog(context).models if m.checked]


class IO_MS3D_MDL_OT_import_game_models(bpy.types.Operator):
    """Import the checked models (or the one named) with File > Import > Source Model's options"""

    bl_idname = "io_ms3d_mdl.import_game_models"
    bl_label = "Import Checked"
    bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 - Blender reads a set

    path: StringProperty(name="Model", description="Import only this one", options={"SKIP_SAVE"})  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        paths = [self.path] if self.path else checked_paths(context)
        if not paths:
            self.report({"WARNING"}, "Check the models to import first (or click one)")
            return {"CANCELLED"}
        return _import_reported(self, context, paths)


def _import_reported(operator: bpy.types.Operator, context: bpy.types.Context, paths: list[str]) -> set[str]:
    try:
        result = import_models(context, paths)
    except RuntimeError as exc:  # the import operator's ERROR report: nothing imported
        operator.report({"ERROR"}, str(exc).removeprefix("Error: ").strip())
        return {"CANCELLED"}
    if "FINISHED" in result:
        operator.report({"INFO"}, f"Imported {len(paths)} model{'s' if len(paths) != 1 else ''} from the game browser")
    return result


class IO_MS3D_MDL_OT_check_game_models(bpy.types.Operator):
    """Check every model the filters show, or uncheck all"""

    bl_idname = "io_ms3d_mdl.check_game_models"
    bl_label = "Check Shown"
    bl_options = {"INTERNAL"}  # noqa: RUF012 - Blender reads a set

    check: BoolProperty(default=True)  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        cat = catalog(context)
        values = shown(cat) if self.check else [False] * len(cat.models)
        cat.models.foreach_set("checked", values)
        return {"FINISHED"}


class IO_MS3D_MDL_OT_refresh_game_models(bpy.types.Operator):
    """List the models of the mounted games and archives again (after installing or updating a game)"""

    bl_idname = "io_ms3d_mdl.refresh_game_models"
    bl_label = "Refresh"
    bl_options = {"INTERNAL"}  # noqa: RUF012 - Blender reads a set

    def execute(self, context: bpy.types.Context) -> set[str]:
        refresh(context, force=True)
        self.report({"INFO"}, f"{len(catalog(context).models):,} models in {len(_STATE['mounts'] or ())} mounts")
        report_note(self)
        return {"FINISHED"}


class IO_MS3D_MDL_OT_mount_game(bpy.types.Operator, ImportHelper):
    """Mount a game (its gameinfo.txt or folder) or a .vpk/.gma archive: added to the add-on's games and listed"""

    bl_idname = "io_ms3d_mdl.mount_game"
    bl_label = "Mount"
    bl_options = {"INTERNAL"}  # noqa: RUF012 - Blender reads a set

    filename_ext = ""
    filter_glob: StringProperty(default="*.vpk;*.gma;gameinfo.txt", options={"HIDDEN"})  # type: ignore[valid-type]
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        path = preferences.chosen_path(self.filepath, self.directory)
        if not path:
            self.report({"ERROR"}, "Pick a game's gameinfo.txt or folder, or a .vpk/.gma archive")
            return {"CANCELLED"}
        if not preferences.add_game(context, path):
            self.report({"ERROR"}, "The add-on's preferences are not available (is it enabled?)")
            return {"CANCELLED"}
        refresh(context)
        self.report({"INFO"}, f"Mounted {game_sources.label(path)}: {len(catalog(context).models):,} models listed")
        report_note(self)
        return {"FINISHED"}


# --- the window and the sidebar ----------------------------------------------------------------------------------


def draw_browser(layout: bpy.types.UILayout, context: bpy.types.Context, rows: int = 20, compact: bool = False) -> None:
    """The window's contents; ``compact`` for the sidebar: filters stacked, icon buttons, no import options."""
    cat = catalog(context)
    filters = layout.column(align=True) if compact else layout.row(align=True)
    filters.prop(cat, "search", text="", icon="VIEWZOOM", placeholder="Name")
    row = filters.row(align=True) if compact else filters
    row.prop(cat, "folder", text="", icon="FILE_FOLDER", placeholder="Folder")
    row.prop(cat, "game", text="")
    flags = shown(cat)
    total = len(cat.models)
    if not total:
        _draw_empty(layout.box(), context)
    if _STATE.get("note"):
        layout.label(text=_STATE["note"][:200], icon="ERROR")
    layout.template_list(IO_MS3D_MDL_UL_game_models.__name__, "", cat, "models", cat, "index", rows=rows)
    checked = sum(1 for m in cat.models if m.checked)
    counts = f"{sum(flags):,} of {total:,} shown, {checked:,} checked"
    check = IO_MS3D_MDL_OT_check_game_models.bl_idname
    if compact:
        layout.label(text=counts)
        row = layout.row(align=True)
        row.prop(cat, "import_on_click", text="Click Imports")
        row.operator(check, text="", icon="CHECKBOX_HLT").check = True
        row.operator(check, text="", icon="CHECKBOX_DEHLT").check = False
        row.operator(IO_MS3D_MDL_OT_mount_game.bl_idname, text="", icon="ADD")
        row.operator(IO_MS3D_MDL_OT_refresh_game_models.bl_idname, text="", icon="FILE_REFRESH")
        return
    row = layout.row(align=True)
    row.label(text=counts.replace(" shown", " models shown"))
    row.operator(check, text="Check Shown", icon="CHECKBOX_HLT").check = True
    row.operator(check, text="Uncheck All", icon="CHECKBOX_DEHLT").check = False
    row = layout.row(align=True)
    row.prop(cat, "import_on_click")
    row.operator(IO_MS3D_MDL_OT_mount_game.bl_idname, text="Mount...", icon="ADD")
    row.operator(IO_MS3D_MDL_OT_refresh_game_models.bl_idname, icon="FILE_REFRESH")
    _draw_options(layout, context, cat)


def _draw_empty(box: bpy.types.UILayout, context: bpy.types.Context) -> None:
    mounts = preferences.mounted_games(context, discover=False)
    if mounts:
        box.label(text=f"Nothing listed from {len(mounts)} mounted game(s) or archive(s): press Refresh.", icon="INFO")
    else:
        box.label(text="Nothing mounted yet: mount a game (gameinfo.txt) or a .vpk/.gma archive,", icon="INFO")
        box.label(text="or list your Steam games in the add-on's preferences.")


def _draw_options(layout: bpy.types.UILayout, context: bpy.types.Context, cat: IO_MS3D_MDL_game_catalog) -> None:
    """File > Import > Source Model's options, the same values its file browser shows (they are shared)."""
    header, body = layout.panel("IO_MS3D_MDL_game_browser_options", default_closed=True)
    header.label(text="Import Options (shared with File > Import > Source Model)")
    last = context.window_manager.operator_properties_last(IMPORT_OPERATOR)
    if body and last is not None:
        grid = body.grid_flow(columns=2, even_columns=True)
        names = [p.identifier for p in last.bl_rna.properties if p.identifier not in NOT_OPTIONS and not p.is_hidden]
        for name in sorted(names, key=lambda n: OPTION_ORDER.index(n) if n in OPTION_ORDER else len(OPTION_ORDER)):
            grid.prop(last, name)


# The options in the order of the import operator's own sidebar sections (Transform, Geometry, Armature, ...).
OPTION_ORDER = section_order(SOURCE_SECTIONS)


WINDOW_ROWS = 20


class IO_MS3D_MDL_OT_browse_game_models(bpy.types.Operator):
    """Search the models of the mounted games and VPK/GMA archives and import them (a click, or check several)"""

    bl_idname = "io_ms3d_mdl.browse_game_models"
    bl_label = "Browse Game Models"
    bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 - Blender reads a set

    def invoke(self, context: bpy.types.Context, event: bpy.types.Event) -> set[str]:
        refresh(context)
        report_note(self)
        # As tall as the list needs (up to WINDOW_ROWS), fixed while the window is open so it never jumps.
        _STATE["rows"] = max(6, min(WINDOW_ROWS, len(catalog(context).models) + 1))
        width = min(1100, max(600, context.window.width - 200)) if context.window else 900
        return context.window_manager.invoke_props_dialog(self, width=width, confirm_text="Import Checked")

    def draw(self, context: bpy.types.Context) -> None:
        draw_browser(self.layout, context, rows=_STATE.get("rows", WINDOW_ROWS))

    def execute(self, context: bpy.types.Context) -> set[str]:
        paths = checked_paths(context)
        if not paths:  # closing the window with nothing checked is not an error
            return {"CANCELLED"}
        return _import_reported(self, context, paths)


class IO_MS3D_MDL_PT_game_models(bpy.types.Panel):
    """The 3D Viewport sidebar (N), tab "Source": the same list, beside the models it imports."""

    bl_label = "Game Models"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Source"
    bl_options = {"DEFAULT_CLOSED"}  # noqa: RUF012 - Blender reads a set

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.operator(IO_MS3D_MDL_OT_browse_game_models.bl_idname, text="Open Browser Window", icon="WINDOW")
        draw_browser(layout, context, rows=8, compact=True)
        layout.operator(IO_MS3D_MDL_OT_import_game_models.bl_idname, icon="IMPORT")


def register_properties() -> None:
    bpy.types.WindowManager.io_ms3d_mdl_game_catalog = PointerProperty(type=IO_MS3D_MDL_game_catalog)


def unregister_properties() -> None:
    del bpy.types.WindowManager.io_ms3d_mdl_game_catalog


CLASSES = (
    IO_MS3D_MDL_game_model,
    IO_MS3D_MDL_game_catalog,
    IO_MS3D_MDL_UL_game_models,
    IO_MS3D_MDL_OT_import_game_models,
    IO_MS3D_MDL_OT_check_game_models,
    IO_MS3D_MDL_OT_refresh_game_models,
    IO_MS3D_MDL_OT_mount_game,
    IO_MS3D_MDL_OT_browse_game_models,
    IO_MS3D_MDL_PT_game_models,
)
