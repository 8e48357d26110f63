"""Add-on preferences: the games every import mounts (found in the Steam libraries, each with a toggle, plus any
game folder, mod folder or archive the user adds), the user's own material search folders, and whether absolute
texture paths are followed.

What an import may read is decided from these: the model's own folders, its game folder, the enabled games and the
search folders (``access.py`` confines every read to them)."""

from __future__ import annotations

import os

import bpy
from bpy.props import BoolProperty, CollectionProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ImportHelper

from . import game_sources

# The add-on's module name: the package two levels up (``<addon>.io_ms3d_mdl.blender``). When the code is loaded
# without its add-on entry (tests, scripts) there are no preferences and nothing extra is searched or mounted.
ADDON = __package__.rsplit(".", 2)[0] if __package__ and __package__.count(".") >= 2 else None


class IO_MS3D_MDL_search_root(bpy.types.PropertyGroup):
    path: StringProperty(name="Folder", subtype="DIR_PATH")  # type: ignore[valid-type]


def _retitle(game: bpy.types.PropertyGroup, context: bpy.types.Context) -> None:
    game.title = game_sources.label(bpy.path.abspath(game.path)) if game.path else ""


class IO_MS3D_MDL_game(bpy.types.PropertyGroup):
    """One mountable source: a game folder (holding gameinfo.txt), a mod folder, or a .vpk/.gma archive."""

    title: StringProperty(name="Title", description="The game's title (gameinfo.txt) or the archive's name")  # type: ignore[valid-type]
    path: StringProperty(  # type: ignore[valid-type]
        name="Path", description="Game folder, mod folder, or .vpk/.gma archive", subtype="FILE_PATH", update=_retitle
    )
    enabled: BoolProperty(name="Mount", description="Mount it for every import and list its models", default=True)  # type: ignore[valid-type]
    steam: BoolProperty(name="Found in Steam", description="Found in a Steam library (refreshed, never typed)")  # type: ignore[valid-type]


class IO_MS3D_MDL_OT_search_root(bpy.types.Operator):
    """Add or remove a game/mod folder searched for Source materials"""

    bl_idname = "io_ms3d_mdl.search_root"
    bl_label = "Material Search Folder"
    bl_options = {"INTERNAL"}

    remove: IntProperty(default=-1)  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        prefs = context.preferences.addons[ADDON].preferences
        if self.remove >= 0:
            prefs.search_roots.remove(self.remove)
        else:
            prefs.search_roots.add()
        return {"FINISHED"}


class IO_MS3D_MDL_OT_remove_game(bpy.types.Operator):
    """Forget this game or archive (nothing on disk is touched)"""

    bl_idname = "io_ms3d_mdl.remove_game"
    bl_label = "Remove Game"
    bl_options = {"INTERNAL"}

    index: IntProperty(default=-1)  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        prefs = _preferences(context)
        if prefs is None or not 0 <= self.index < len(prefs.games):
            return {"CANCELLED"}
        prefs.games.remove(self.index)
        return {"FINISHED"}


class IO_MS3D_MDL_OT_find_steam_games(bpy.types.Operator):
    """Look for Source games in the Steam libraries (libraryfolders.vdf) and list them; toggles already set are kept"""

    bl_idname = "io_ms3d_mdl.find_steam_games"
    bl_label = "Find Steam Games"
    bl_options = {"INTERNAL"}

    def execute(self, context: bpy.types.Context) -> set[str]:
        prefs = _preferences(context)
        if prefs is None:
            self.report({"ERROR"}, "The add-on's preferences are not available (is it enabled?)")
            return {"CANCELLED"}
        added, gone = sync_steam_games(prefs)
        count = sum(g.steam for g in prefs.games)
        self.report({"INFO"}, f"Steam: {count} games ({added} new, {gone} no longer found)")
        return {"FINISHED"}


class IO_MS3D_MDL_OT_add_game(bpy.types.Operator, ImportHelper):
    """Add a game folder (pick its gameinfo.txt or the folder), a mod folder, or a .vpk/.gma archive to mount"""

    bl_idname = "io_ms3d_mdl.add_game"
    bl_label = "Add"
    bl_options = {"INTERNAL"}

    filename_ext = ""
    filter_glob: StringProperty(default="*.vpk;*.gma;gameinfo.txt", options={"HIDDEN"})  # type: ignore[valid-type]
    directory: StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"})  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        path = chosen_path(self.filepath, self.directory)
        if not path:
            self.report({"ERROR"}, "Pick a game folder, its gameinfo.txt, or a .vpk/.gma archive")
            return {"CANCELLED"}
        if not add_game(context, path):
            self.report({"ERROR"}, "The add-on's preferences are not available (is it enabled?)")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Mounted {path}")
        return {"FINISHED"}


def chosen_path(filepath: str, directory: str) -> str:
    """What a pick means: an archive as itself, a gameinfo.txt as its game folder, no file as the folder shown."""
    filepath = bpy.path.abspath(filepath) if filepath else ""
    if filepath and os.path.isfile(filepath):
        if os.path.basename(filepath).lower() == "gameinfo.txt":
            return os.path.dirname(filepath)
        return filepath
    folder = bpy.path.abspath(directory or (os.path.dirname(filepath) if filepath else ""))
    return os.path.normpath(folder) if folder and os.path.isdir(folder) else ""


class IO_MS3D_MDL_preferences(bpy.types.AddonPreferences):
    bl_idname = ADDON or "io_ms3d_mdl"

    games: CollectionProperty(type=IO_MS3D_MDL_game)  # type: ignore[valid-type]
    steam_folder: StringProperty(  # type: ignore[valid-type]
        name="Steam Folder",
        description="Where Steam is installed, when not in its usual place (empty: look in the usual places)",
        subtype="DIR_PATH",
    )
    search_roots: CollectionProperty(type=IO_MS3D_MDL_search_root)  # type: ignore[valid-type]
    allow_absolute_paths: BoolProperty(  # type: ignore[valid-type]
        name="Follow Absolute Texture Paths",
        description="Load textures that a model names by an absolute path (C:\\..., /...). Only for your own files: "
        "a downloaded model could name any image on this computer, and it would be embedded in exports. "
        "When off, only the file name is looked for in the model's folders",
        default=False,
    )

    def draw(self, context: bpy.types.Context) -> None:
        draw_games(self.layout, self)
        layout = self.layout.box()
        layout.label(text="Material Folders", icon="MATERIAL")
        layout.label(text="Searched for materials after the model's own folders (each holds materials/).")
        for i, root in enumerate(self.search_roots):
            row = layout.row(align=True)
            row.prop(root, "path", text="")
            row.operator(IO_MS3D_MDL_OT_search_root.bl_idname, text="", icon="X").remove = i
        layout.operator(IO_MS3D_MDL_OT_search_root.bl_idname, text="Add Folder", icon="ADD")
        self.layout.label(text="Imports read only from the model's folders, its game, the games and these folders.")
        self.layout.prop(self, "allow_absolute_paths")


def draw_games(layout: bpy.types.UILayout, prefs: bpy.types.AddonPreferences) -> None:
    box = layout.box()
    box.label(text="Games and Archives (mounted by every import, listed by Browse Game Models)", icon="FILE_FOLDER")
    if not len(prefs.games):
        box.label(text="None yet: find your Steam games, or add a game, mod or .vpk/.gma archive.")
    for i, game in enumerate(prefs.games):
        row = box.row(align=True)
        row.prop(game, "enabled", text="")
        split = row.split(factor=0.4, align=True)
        icon = "FILE_ARCHIVE" if game_sources.is_archive(game.path) else "FILE_FOLDER"
        split.label(text=game.title or "(no title)", icon=icon)
        sub = split.row(align=True)
        sub.enabled = not game.steam  # a Steam game's path comes from Steam; "Find Steam Games" refreshes it
        sub.prop(game, "path", text="")
        row.operator(IO_MS3D_MDL_OT_remove_game.bl_idname, text="", icon="X").index = i
    row = box.row(align=True)
    row.operator(IO_MS3D_MDL_OT_add_game.bl_idname, text="Add Game, Mod or Archive...", icon="ADD")
    row.operator(IO_MS3D_MDL_OT_find_steam_games.bl_idname, icon="VIEWZOOM")
    box.prop(prefs, "steam_folder")


def _preferences(context: bpy.types.Context) -> bpy.types.AddonPreferences | None:
    addon = context.preferences.addons.get(ADDON) if ADDON else None
    return addon.preferences if addon is not None else None


def search_roots(context: bpy.types.Context) -> tuple[str, ...]:
    prefs = _preferences(context)
    return tuple(bpy.path.abspath(r.path) for r in prefs.search_roots if r.path) if prefs else ()


def allow_absolute_paths(context: bpy.types.Context) -> bool:
    prefs = _preferences(context)
    return bool(prefs and prefs.allow_absolute_paths)


# Steam is asked once per session (games installed or removed since the last session show up by themselves).
SESSION = {"steam_synced": False}


def mounted_games(context: bpy.types.Context, discover: bool = True) -> tuple[str, ...]:
    """The enabled games and archives, in the listed order (earlier ones win a lookup), as absolute paths.
    The first call that may ``discover`` (never a panel's draw) looks for the Steam games once."""
    prefs = _preferences(context)
    if prefs is None:
        return ()
    if discover and not SESSION["steam_synced"]:  # "Find Steam Games" looks again
        sync_steam_games(prefs)
    return tuple(os.path.normpath(bpy.path.abspath(g.path)) for g in prefs.games if g.enabled and g.path)


def discover_later() -> None:
    """A timer after start-up (windowed sessions): the preferences list this session's Steam games before any
    import asks for them."""
    mounted_games(bpy.context)


def sync_steam_games(prefs: bpy.types.AddonPreferences) -> tuple[int, int]:
    """Make the Steam entries the games Steam has now: new ones added (enabled), missing ones dropped, the user's
    toggles kept. Returns (added, dropped)."""
    SESSION["steam_synced"] = True
    found = game_sources.steam_games(bpy.path.abspath(prefs.steam_folder) if prefs.steam_folder else "")
    folders = {os.path.normcase(folder) for _, folder in found}
    gone = [i for i, g in enumerate(prefs.games) if g.steam and os.path.normcase(g.path) not in folders]
    for i in reversed(gone):
        prefs.games.remove(i)
    known = {os.path.normcase(g.path) for g in prefs.games}
    added = 0
    for title, folder in found:
        if os.path.normcase(folder) in known:
            continue
        game = prefs.games.add()
        game.path, game.steam, game.enabled = folder, True, True
        game.title = title
        added += 1
    return added, len(gone)


def add_game(context: bpy.types.Context, path: str) -> bool:
    """List ``path`` (enabled) unless it is listed already, then enable it. False without preferences."""
    prefs = _preferences(context)
    if prefs is None:
        return False
    for game in prefs.games:
        if os.path.normcase(os.path.normpath(bpy.path.abspath(game.path))) == os.path.normcase(path):
            game.enabled = True
            return True
    game = prefs.games.add()
    game.path = path
    return True


CLASSES = (
    (
        IO_MS3D_MDL_search_root,
        IO_MS3D_MDL_game,
        IO_MS3D_MDL_OT_search_root,
        IO_MS3D_MDL_OT_remove_game,
        IO_MS3D_MDL_OT_find_steam_games,
        IO_MS3D_MDL_OT_add_game,
        IO_MS3D_MDL_preferences,
    )
    if ADDON
    else ()
)
