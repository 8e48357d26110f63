"""A tour of the add-on's user interface in a real Blender window, with a screenshot at every stop.

Run by ``tests/test_real_blender.py`` (``test_gui_tour``) through the ``blender-gui`` wrapper (Xvfb, software GL):

    blender-gui --python tests/real_blender/gui_tour.py -- --out DIR --mdl MODEL.mdl --ms3d MODEL.ms3d --rigged RIG.mdl
        --vpk ADDON.vpk --steam STEAM_FOLDER [--goldsrc HL1.mdl] [--bloodlines VTMB.mdl] [--bst BST_FOLDER]

The extension must be installed and enabled in the user configuration Blender runs with. The tour opens
File > Import, both file browsers with their options sidebar, imports the Source model, selects one of its
objects and shows the Object and Collection tabs, the 3D Viewport sidebar tab "Source", Material Preview and the
model's collision hull (its hidden physics collection, shown), imports a rigged model while one of the first
model's meshes is active, shows the add-on's games in the Preferences window (a made-up Steam installation's games
found, the VPK added), opens Browse Game Models and clicks the VPK's first model, which imports, and finally shows
a Half-Life 1 model and a Bloodlines character alone, textured, in Material Preview, then File > Export to
MilkShape 3D and back, and to Source Model Sources: the unedited model, then the model edited in Edit Mode, whose
reference SMD Blender Source Tools (``--bst``, its folder) imports in this same Blender.
Screenshots are of the whole X screen (``import -window root``); ``DIR/result.json`` records each one with the
screen rectangle worth cropping, what was checked, and any Python error (the test fails on those). Blender quits
at the end, also after an error.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import subprocess
import sys
import time
import traceback

import bmesh
import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # Blender runs this file alone
from weight_summary import weight_summary

ADDON = "bl_ext.user_default.io_ms3d_mdl"
PANELS = ("IO_MS3D_MDL_PT_source_object", "IO_MS3D_MDL_PT_source_collection", "IO_MS3D_MDL_PT_source_view3d")
BROWSER_FIRST_ROW = (150, 540)  # where the browser window's first row lies when opened at the screen's centre
BROWSER_CROP = [8, 450, 1164, 344]  # the window, opened at the centre with two models
DEADLINE = 480.0  # seconds: the tour gives up (and says so) rather than hang the test

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--mdl", required=True)
parser.add_argument("--ms3d", required=True)
parser.add_argument("--rigged", required=True)
parser.add_argument("--goldsrc", default="", help="a GoldSrc (Half-Life 1) model to import and show")
parser.add_argument("--bloodlines", default="", help="a Bloodlines (MDL 2531) character to import and show")
parser.add_argument("--vpk", required=True)
parser.add_argument("--steam", required=True)
parser.add_argument("--bst", default="", help="the folder holding Blender Source Tools' io_scene_valvesource")
ARGS = parser.parse_args(sys.argv[sys.argv.index("--") + 1 :])

RESULT: dict = {"shots": {}, "checks": {}, "errors": [], "finished": False}
DRAWS = dict.fromkeys(PANELS, 0)
STARTED = time.monotonic()
OUTLINER_HEIGHT = 280  # pixels: the model's collections and objects, the collision collection, Camera and Light


# --- helpers -----------------------------------------------------------------------------------------------------


def xdotool(*args) -> None:
    subprocess.run(["xdotool", *map(str, args)], check=True)


def main_window() -> bpy.types.Window:
    return bpy.context.window_manager.windows[0]


def find_area(kind: str, window: bpy.types.Window | None = None) -> bpy.types.Area:
    window = window or main_window()
    return next(a for a in window.screen.areas if a.type == kind)


def find_region(area: bpy.types.Area, kind: str) -> bpy.types.Region:
    return next(r for r in area.regions if r.type == kind)


def screen_height() -> int:
    return int(
        subprocess.run(["xdotool", "getdisplaygeometry"], capture_output=True, text=True, check=True).stdout.split()[1]
    )


def screen_rect(window: bpy.types.Window, x: int, y: int, width: int, height: int) -> list[int]:
    """A rectangle in Blender's window coordinates as X screen coordinates (top left). Blender's window position
    counts from the screen's bottom left too: a window away from the screen's middle (5.2 opens the file browser at
    the top, 4.3 centred) lands where X has it only when measured from the screen's bottom."""
    return [window.x + x, screen_height() - (window.y + y + height), width, height]


def area_rect(area: bpy.types.Area, window: bpy.types.Window | None = None) -> list[int]:
    return screen_rect(window or main_window(), area.x, area.y, area.width, area.height)


def override(kind: str = "VIEW_3D", window: bpy.types.Window | None = None):
    window = window or main_window()
    area = find_area(kind, window)
    return bpy.context.temp_override(window=window, area=area, region=find_region(area, "WINDOW"))


def shot(name: str, crop: list[int], note: str) -> None:
    path = os.path.join(ARGS.out, f"{name}.png")
    subprocess.run(["import", "-window", "root", path], check=True)
    RESULT["shots"][name] = {"path": path, "crop": [int(v) for v in crop], "note": note}
    print(f"gui_tour: {time.monotonic() - STARTED:5.1f} s: screenshot {name}: {path}", flush=True)


def wait_until(predicate, timeout: float, poll: float = 0.25):
    """Yield poll intervals until ``predicate()`` holds; return whether it did before ``timeout``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        yield poll
    return predicate()


def count_draws() -> None:
    """Wrap each Source panel's draw so the tour can tell the panel really drew (not just that it polls)."""
    for name in PANELS:
        cls = getattr(bpy.types, name)
        cls.draw = counted(name, cls.draw)


def counted(name: str, original):
    # Exactly (self, context): Blender 4.3 checks a registered draw's argument count and crashes (SIGSEGV) on
    # a function with extra (defaulted) parameters.
    def draw(self, context):
        DRAWS[name] += 1
        original(self, context)

    return draw


PREFERENCE_DRAWS = [0]
GAME_MODELS_DRAWS = [0]


def counted_into(counter: list, original):
    def draw(self, context):  # exactly (self, context), as counted() says
        counter[0] += 1
        original(self, context)

    return draw


def model_objects(collection: bpy.types.Collection) -> list[bpy.types.Object]:
    return sorted(collection.all_objects, key=lambda o: (o.type != "MESH", o.name))


def layer_collection_of(layer: bpy.types.LayerCollection, collection: bpy.types.Collection):
    if layer.collection == collection:
        return layer
    for child in layer.children:
        found = layer_collection_of(child, collection)
        if found is not None:
            return found
    return None


# --- the tour ----------------------------------------------------------------------------------------------------


def tour():
    checks = RESULT["checks"]
    checks["addon_enabled"] = ADDON in bpy.context.preferences.addons
    assert checks["addon_enabled"], f"{ADDON} is not enabled: {sorted(bpy.context.preferences.addons.keys())}"
    if "Cube" in bpy.data.objects:  # the startup cube would sit inside the imported model
        bpy.data.objects.remove(bpy.data.objects["Cube"])
    count_draws()

    # Widen the right-hand column (outliner, properties) by dragging its border, so names fit in the shots.
    border = find_area("PROPERTIES").x - 1
    xdotool("mousemove", border, 500)
    yield 0.3
    xdotool("mousedown", 1)
    for step in range(1, 11):  # in steps, with time for Blender to see each one
        yield 0.05
        xdotool("mousemove", border - 20 * step, 500)
    yield 0.3
    xdotool("mouseup", 1)
    yield 0.5
    checks["properties_width"] = find_area("PROPERTIES").width
    # A taller outliner, so the shots show every name an import makes (5.2's default layout gives it half of 4.3's).
    x, top, width, _ = area_rect(find_area("PROPERTIES"))
    grow = OUTLINER_HEIGHT - find_area("OUTLINER").height
    if grow > 0:  # drag the border between the outliner and the properties down
        xdotool("mousemove", x + width // 2, top - 1)
        yield 0.3
        xdotool("mousedown", 1)
        for step in range(1, 11):
            yield 0.05
            xdotool("mousemove", x + width // 2, top - 1 + grow * step // 10)
        yield 0.3
        xdotool("mouseup", 1)
        yield 0.5
    checks["outliner_height"] = find_area("OUTLINER").height
    assert checks["outliner_height"] >= OUTLINER_HEIGHT - 5, f"outliner {checks['outliner_height']} px high"

    # File > Import: click File in the top bar, hover Import (positions of Blender 4.3's default layout at
    # 1600x1000; keyboard events from xdotool do not reach Blender's menus under Xvfb).
    xdotool("mousemove", 400, 400)
    xdotool("mousemove", 46, 14)
    yield 0.5
    xdotool("click", 1)
    yield 1.0
    xdotool("mousemove", 70, 300)
    xdotool("mousemove", 90, 311)
    yield 1.5
    # Tall enough for 5.2's longer Import menu (it lists two FBX importers) and our three entries.
    shot("import_menu", [0, 0, 760, 570], "File > Import with the MilkShape 3D, Source Model and Game Models entries")
    xdotool("mousemove", 800, 600)
    xdotool("click", 1)  # outside the menu: closes it (and deselects, harmless before the import)
    yield 0.8

    # The two file browsers, each opened in the sample's folder with the options sidebar shown.
    for name, operator, path in (
        ("ms3d_browser", bpy.ops.import_scene.ms3d, ARGS.ms3d),
        ("source_browser", bpy.ops.import_scene.source_mdl, ARGS.mdl),
    ):
        windows = len(bpy.context.window_manager.windows)
        with override():
            operator("INVOKE_DEFAULT", directory=os.path.dirname(path) + os.sep)
        opened = yield from wait_until(lambda n=windows: len(bpy.context.window_manager.windows) > n, 10)
        assert opened, f"{name}: no file browser window opened"
        browser = bpy.context.window_manager.windows[-1]
        area = find_area("FILE_BROWSER", browser)
        space = area.spaces.active
        space.show_region_tool_props = True
        space.params.filename = os.path.basename(path)
        checks[f"{name}_directory"] = space.params.directory.decode()
        checks[f"{name}_operator"] = space.active_operator.bl_idname if space.active_operator else None
        checks[f"{name}_physics_option"] = getattr(space.active_operator, "import_physics", None)
        assert os.path.samefile(checks[f"{name}_directory"], os.path.dirname(path)), f"{name}: not in the folder"
        files = find_region(area, "WINDOW")
        x, y, width, height = screen_rect(browser, files.x, files.y, files.width, files.height)
        xdotool("mousemove", x + width // 2, y + height - 40)  # on the empty part of the file list: no tooltip
        yield 3.0  # the folder listing and thumbnails settle
        shot(name, screen_rect(browser, 0, 0, browser.width, browser.height), f"{operator.idname()} file browser")
        if name == "source_browser":  # the options below the fold: scroll the sidebar to Extras and Limits
            options = find_region(area, "TOOL_PROPS")
            x, y, width, height = screen_rect(browser, options.x, options.y, options.width, options.height)
            xdotool("mousemove", x + width // 2, y + height // 2)
            for _ in range(2):
                yield 0.4
                xdotool("click", "--repeat", 15, "--delay", 20, 5)
            xdotool("mousemove", x - 200, y + height // 2)  # no hover highlight in the shot
            yield 1.0
            shot("source_browser_options", [x, y, width, height], "the Source import options further down: Extras")
        with bpy.context.temp_override(window=browser, area=area, region=find_region(area, "WINDOW")):
            bpy.ops.file.cancel()
        closed = yield from wait_until(lambda n=windows: len(bpy.context.window_manager.windows) == n, 10)
        assert closed, f"{name}: the file browser did not close"
        yield 0.5

    # Import the textured Source model and make one of its meshes the active, selected object.
    before = set(bpy.data.collections)
    with override():
        checks["import"] = sorted(bpy.ops.import_scene.source_mdl(filepath=ARGS.mdl))
    assert checks["import"] == ["FINISHED"], checks["import"]
    models = [c for c in bpy.data.collections if c not in before and "source_version" in c]
    assert models, "the import made no Source model collection"
    model = models[0]
    checks["model"] = model.name
    obj = model_objects(model)[0]
    for other in bpy.context.view_layer.objects:
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj
    checks["active_object"] = obj.name
    with override():
        bpy.ops.view3d.view_selected()
    find_area("VIEW_3D").spaces.active.region_3d.view_distance *= 1.5  # some room around the model
    yield 1.0

    # Object tab, then the model's Collection tab, each scrolled to the bottom where add-on panels go.
    properties = find_area("PROPERTIES")
    outliner = find_area("OUTLINER")
    right_column = area_rect(outliner)
    right_column[3] = area_rect(properties)[1] + properties.height - right_column[1]
    tabs = (
        ("object_tab", "OBJECT", "Object properties: the Source Model panel (skins) of the selected object"),
        ("collection_tab", "COLLECTION", "Collection properties of the imported model: its Source Model panel"),
    )
    for name, tab, note in tabs:
        if tab == "COLLECTION":
            layer = layer_collection_of(bpy.context.view_layer.layer_collection, model)
            bpy.context.view_layer.active_layer_collection = layer
        properties.spaces.active.context = tab
        yield 1.0  # drawn once: a tab's first draw would reset a scroll that came before it
        x, y, _, height = area_rect(find_region(properties, "WINDOW"))
        xdotool("mousemove", x + 100, y + height // 2)
        for _ in range(2):  # twice, in case the first wheel turns came before Blender saw the pointer there
            yield 0.4
            xdotool("click", "--repeat", 25, "--delay", 20, 5)
        xdotool("mousemove", 600, 500)  # no hover highlight in the shot
        yield 1.0
        shot(name, right_column, note)
    bpy.context.view_layer.objects.active = obj

    # The 3D Viewport sidebar (N), tab "Source" (Region.active_panel_category is read-only): click down the tab
    # strip at the sidebar's right edge until it is the active tab.
    view3d = find_area("VIEW_3D")
    view3d.spaces.active.show_region_ui = True
    yield 1.0
    sidebar = find_region(view3d, "UI")
    sx, sy, sw, sh = area_rect(sidebar)
    for tab_y in range(sy + 60, sy + min(sh, 600), 12):
        if sidebar.active_panel_category == "Source":
            break
        xdotool("mousemove", sx + sw - 10, tab_y)
        xdotool("click", 1)
        yield 0.25
    checks["sidebar_category"] = sidebar.active_panel_category
    xdotool("mousemove", sx - 300, sy + sh // 2)  # no hover highlight in the shot
    yield 1.0
    shot("sidebar", [sx - 420, sy, sw + 420, 360], "3D Viewport sidebar, tab Source, beside the model")
    assert checks["sidebar_category"] == "Source", f"sidebar tab is {sidebar.active_panel_category!r}"
    yield from decompile_stop(model, sidebar)

    # Material Preview: EEVEE compiles its shaders in the background (slowly on a software renderer).
    print(f"gui_tour: {time.monotonic() - STARTED:5.1f} s: material preview", flush=True)
    view3d.spaces.active.shading.type = "MATERIAL"
    yield 1.0
    print(f"gui_tour: {time.monotonic() - STARTED:5.1f} s: material preview drawn", flush=True)
    began = time.monotonic()
    compiled = yield from wait_until(lambda: not bpy.app.is_job_running("SHADER_COMPILATION"), 90, poll=0.5)
    checks["shader_compile_seconds"] = round(time.monotonic() - began, 1)
    assert compiled, "shaders still compiling after 90 s"
    yield 3.0
    checks["shading"] = view3d.spaces.active.shading.type
    shot("material_preview", area_rect(view3d), "3D Viewport in Material Preview")

    # The collision model: a hidden collection of wireframe hulls, shown here for one shot.
    physics = next((c for c in model.children if c.name.endswith(" physics")), None)
    assert physics is not None, "the import made no physics collection"
    layer = layer_collection_of(bpy.context.view_layer.layer_collection, physics)
    checks["physics_hidden"] = bool(layer.hide_viewport and physics.hide_render)
    checks["physics_display"] = sorted(o.display_type for o in physics.objects)
    layer.hide_viewport = False
    for other in bpy.context.view_layer.objects:
        other.select_set(False)  # no selection outline over the wires
    view3d.spaces.active.shading.type = "SOLID"
    yield 2.0
    shot("physics", area_rect(view3d), "the collision hull shown: a wireframe over the model")
    checks["panel_draws"] = dict(DRAWS)

    # A rigged model imported while another mesh is active: its weights (some written through Blender's attribute
    # conversion, an operator that acts on the context's object) land on its own meshes; the active mesh keeps its
    # attributes and gets no group.
    bpy.context.view_layer.objects.active = obj
    before = sorted(a.name for a in obj.data.attributes)
    with override():
        checks["rigged_import"] = sorted(bpy.ops.import_scene.source_mdl(filepath=ARGS.rigged))
    checks["rigged_weights"] = weight_summary()
    checks["active_mesh_untouched"] = sorted(a.name for a in obj.data.attributes) == before and not obj.vertex_groups
    yield from game_stops(view3d)
    if ARGS.goldsrc:
        yield from goldsrc_stop(view3d)
    if ARGS.bloodlines:
        yield from bloodlines_stop(view3d)
    yield from export_stop()
    yield from source_export_stop(model, obj)


def decompile_stop(model: bpy.types.Collection, sidebar: bpy.types.Region):
    """The Source Model panel's *Decompile…* button, clicked where the sidebar shot shows it (the panel's third row):
    the folder browser it opens (shot), pointed at a folder of the tour's, then Accept: the model's QC and SMDs are
    written into ``<chosen folder>/<model name>/``."""
    checks = RESULT["checks"]
    chosen = os.path.join(os.path.dirname(os.path.abspath(ARGS.out)), "sources")  # beside the screenshots
    os.makedirs(chosen, exist_ok=True)
    windows = len(bpy.context.window_manager.windows)
    sx, sy, sw, _ = area_rect(sidebar)
    xdotool("mousemove", sx + sw // 2 - 20, sy + 126)  # the button's middle (the tab strip is at the right edge)
    yield 0.5
    xdotool("click", 1)
    browser, area = yield from opened_browser(windows, "the click on Decompile…")
    operator = area.spaces.active.active_operator
    checks["decompile_browser_operator"] = operator.bl_idname if operator else None
    checks["decompile_model"] = operator.model if operator else None
    checks["decompile_starts_beside_the_model"] = os.path.samefile(
        area.spaces.active.params.directory.decode(), os.path.dirname(ARGS.mdl)
    )
    area.spaces.active.params.directory = chosen.encode()  # (a user would browse there)
    xdotool("mousemove", 600, 500)
    yield 2.0
    shot("decompile_browser", screen_rect(browser, 0, 0, browser.width, browser.height), "Decompile…: its folder")
    checks["decompile_accept"] = yield from accept(browser, area, windows, "decompile")
    written = os.path.join(chosen, model.name)
    checks["decompile_files"] = sorted(os.listdir(written)) if os.path.isdir(written) else []
    checks["decompiled_to"] = os.path.relpath(str(model.get("source_decompiled_to", "")), chosen)
    yield 0.5


def game_stops(view3d: bpy.types.Area):
    """Games and archives: the extension's preferences with Steam's games and an add-on VPK, the sidebar's Game
    Models panel, and Browse Game Models importing with a click."""
    checks = RESULT["checks"]
    # The add-on's preferences: the games of a (made-up) Steam installation found, one turned off, and the VPK
    # added, in the Add-ons section with the entry expanded.
    prefs = bpy.context.preferences.addons[ADDON].preferences
    prefs.steam_folder = ARGS.steam
    with override():
        checks["steam"] = sorted(bpy.ops.io_ms3d_mdl.find_steam_games())
        checks["mount"] = sorted(bpy.ops.io_ms3d_mdl.mount_game(filepath=ARGS.vpk))
    prefs.games[0].enabled = False
    checks["games"] = [(g.title, g.enabled, g.steam) for g in prefs.games]
    bpy.context.preferences.active_section = "ADDONS"
    bpy.context.window_manager.addon_search = "Source"
    windows = len(bpy.context.window_manager.windows)
    preferences_class = type(prefs)
    preferences_class.draw = counted_into(PREFERENCE_DRAWS, preferences_class.draw)
    with override():
        bpy.ops.screen.userpref_show()
    opened = yield from wait_until(lambda n=windows: len(bpy.context.window_manager.windows) > n, 10)
    assert opened, "no preferences window opened"
    preferences = bpy.context.window_manager.windows[-1]
    yield 1.5
    top = main_window().height - (preferences.y + preferences.height)  # the window's top edge on the X screen
    # Click the entry's disclosure triangle (bl_info's show_expanded set from here does not reach the window's
    # copy); the count of our preferences' draws says it opened.
    xdotool("mousemove", preferences.x + 188, top + 55)
    yield 0.3
    xdotool("click", 1)
    xdotool("mousemove", preferences.x + preferences.width // 2, top + preferences.height - 40)  # no hover
    yield 1.5
    checks["preferences_draws"] = PREFERENCE_DRAWS[0]
    rect = [preferences.x, top, preferences.width, preferences.height]
    shot("preferences", rect, "Add-ons: the games (Steam's, one off) and the VPK in the extension's preferences")
    with bpy.context.temp_override(window=preferences):
        bpy.ops.wm.window_close()
    closed = yield from wait_until(lambda n=windows: len(bpy.context.window_manager.windows) == n, 10)
    assert closed, "the preferences window did not close"
    yield 0.5

    # The sidebar's Game Models panel (first in the "Source" tab, closed): opened with a click on its header, it
    # lists the VPK's models.
    game_models = bpy.types.IO_MS3D_MDL_PT_game_models
    game_models.draw = counted_into(GAME_MODELS_DRAWS, game_models.draw)
    sx, sy, sw, sh = area_rect(find_region(view3d, "UI"))
    checks["sidebar_rect"] = [sx, sy, sw, sh]
    for header_y in range(sy + 16, sy + 40, 8):  # the header's middle (a retry lower, should the layout shift)
        xdotool("mousemove", sx + sw // 2, header_y)
        yield 0.3
        xdotool("click", 1)
        opened = yield from wait_until(lambda: GAME_MODELS_DRAWS[0] > 0, 2.0)
        if opened:
            break
    xdotool("mousemove", sx - 300, sy + sh // 2)  # no hover highlight in the shot
    yield 1.5
    checks["sidebar_game_models_draws"] = GAME_MODELS_DRAWS[0]
    shot("sidebar_game_models", [sx - 200, sy, sw + 200, 520], "the sidebar's Game Models panel, opened")

    # Browse Game Models: the VPK mounted above (what the window's Mount... does), open the window with the mouse
    # at the screen's centre (Blender puts its confirm button under the mouse), and click the first model's row.
    catalog = bpy.context.window_manager.io_ms3d_mdl_game_catalog
    catalog.search = "knife"
    checks["browser_models"] = [m.path[len(ARGS.vpk) + 1 :].replace(os.sep, "/") for m in catalog.models]
    xdotool("mousemove", 800, 500)
    yield 0.5
    with override():
        checks["browser_open"] = sorted(bpy.ops.io_ms3d_mdl.browse_game_models("INVOKE_DEFAULT"))
    yield 2.0
    xdotool("mousemove", BROWSER_FIRST_ROW[0], BROWSER_FIRST_ROW[1])
    yield 0.5
    xdotool("click", 1)
    imported = yield from wait_until(lambda: "v_knife_t" in bpy.data.collections, 30)
    checks["browser_index"] = catalog.index
    assert imported, "a click on the first model's row imported nothing"
    knife = bpy.data.collections["v_knife_t"]
    checks["browser_import"] = sum(len(o.data.polygons) for o in knife.all_objects if o.type == "MESH")
    xdotool("mousemove", BROWSER_FIRST_ROW[0], BROWSER_FIRST_ROW[1] + 120)  # no hover highlight on the row
    yield 2.0
    shot("game_browser", BROWSER_CROP, "Browse Game Models: an add-on VPK's models, the first one imported")
    xdotool("key", "Escape")  # the window stays open for more clicks: closed here, it hides nothing later
    yield 1.0


def import_alone(path: str, check: str) -> tuple[bpy.types.Collection, list[bpy.types.Object]]:
    """``path`` through the Source Model importer, facing the viewer (forward -X), its result in ``checks[check]``;
    every object imported before is hidden (out of the picture). Returns the model's collection and visible meshes."""
    with override():
        RESULT["checks"][check] = sorted(bpy.ops.import_scene.source_mdl(filepath=path, axis_forward="-X", axis_up="Z"))
    model = bpy.data.collections[os.path.splitext(os.path.basename(path))[0]]
    ours = set(model.all_objects)
    for other in bpy.context.view_layer.objects:
        other.hide_set(other not in ours)
    return model, [o for o in model.all_objects if o.type == "MESH" and o.visible_get()]


def front_view_shot(view3d: bpy.types.Area, meshes: list[bpy.types.Object], name: str, note: str):
    """``meshes`` framed from the front, textured (Material Preview, no sidebar or overlays), shot once EEVEE has
    compiled its shaders."""
    view3d.spaces.active.show_region_ui = False
    for other in bpy.context.view_layer.objects:
        other.select_set(other in meshes)
    bpy.context.view_layer.objects.active = meshes[0]
    with override():
        bpy.ops.view3d.view_axis(type="FRONT")
        bpy.ops.view3d.view_selected()
    for other in bpy.context.view_layer.objects:
        other.select_set(False)
    view3d.spaces.active.shading.type = "MATERIAL"
    view3d.spaces.active.overlay.show_overlays = False
    yield 1.0
    compiled = yield from wait_until(lambda: not bpy.app.is_job_running("SHADER_COMPILATION"), 90, poll=0.5)
    assert compiled, "shaders still compiling after 90 s"
    yield 3.0
    shot(name, area_rect(view3d), note)


def goldsrc_stop(view3d: bpy.types.Area):
    """A Half-Life 1 model through the same Source Model importer, alone in the view, textured (Material Preview),
    facing the viewer (forward -X: GoldSrc characters face +X), posed in its first sequence."""
    checks = RESULT["checks"]
    model, meshes = import_alone(ARGS.goldsrc, "goldsrc_import")
    checks["goldsrc_engine"] = model.get("source_engine")
    checks["goldsrc_meshes"] = len(meshes)
    checks["goldsrc_images"] = sorted(
        {
            n.image.size[0] > 1
            for o in meshes
            for s in o.material_slots
            if s.material
            for n in s.material.node_tree.nodes
            if n.bl_idname == "ShaderNodeTexImage" and n.image
        }
    )
    bpy.context.scene.frame_set(3)
    yield from front_view_shot(
        view3d, meshes, "goldsrc", "a Half-Life 1 model imported through File > Import > Source Model"
    )


def bloodlines_stop(view3d: bpy.types.Area):
    """A Vampire: The Masquerade – Bloodlines character (MDL 2531: vertices in the .mdl, VTX 107 strips, Troika's
    .tth/.ttz textures) alone in the view, textured (Material Preview), facing the viewer, in its default pose."""
    checks = RESULT["checks"]
    model, meshes = import_alone(ARGS.bloodlines, "bloodlines_import")
    checks["bloodlines_version"] = model.get("source_version")
    armatures = [o for o in model.all_objects if o.type == "ARMATURE"]
    checks["bloodlines_meshes"] = len(meshes)
    checks["bloodlines_triangles"] = sum(sum(len(p.vertices) - 2 for p in o.data.polygons) for o in meshes)
    checks["bloodlines_bones"] = sum(len(a.data.bones) for a in armatures)
    checks["bloodlines_action"] = [
        a.animation_data.action.name if a.animation_data and a.animation_data.action else None for a in armatures
    ]
    checks["bloodlines_images"] = sorted(
        {
            (n.image.name, *n.image.size)
            for o in meshes
            for s in o.material_slots
            if s.material and s.material.node_tree
            for n in s.material.node_tree.nodes
            if n.bl_idname == "ShaderNodeTexImage" and n.image and n.image.size[0] > 1
        }
    )
    bpy.context.scene.frame_set(1)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    heights = [
        (o.matrix_world @ v.co).z for o in meshes for v in o.evaluated_get(depsgraph).to_mesh().vertices
    ]  # posed: the character's feet and head in the evaluated (skinned) mesh
    scale = float(model.get("source_scale", 1.0)) or 1.0  # back to Source units
    checks["bloodlines_height"] = [round(min(heights) / scale, 3), round(max(heights) / scale, 3)] if heights else []
    yield from front_view_shot(
        view3d, meshes, "bloodlines", "a Bloodlines (MDL 2531) character, textured, in its default pose"
    )


def export_stop():
    """File > Export > MilkShape 3D: the menu entry, its file browser with the options sidebar (presets on top),
    then the MilkShape sample exported (selected objects only) and imported again with the same counts."""
    checks = RESULT["checks"]
    for other in bpy.context.view_layer.objects:
        other.hide_set(True)  # the models imported before, out of the export and the picture
    before = set(bpy.data.collections)
    with override():
        checks["export_source_import"] = sorted(bpy.ops.import_scene.ms3d(filepath=ARGS.ms3d))
    model = next(c for c in bpy.data.collections if c not in before)
    ours = set(model.all_objects)
    for other in bpy.context.view_layer.objects:
        other.select_set(other in ours)
    bpy.context.view_layer.objects.active = next(o for o in ours if o.type == "ARMATURE")
    view3d = find_area("VIEW_3D")
    view3d.spaces.active.shading.type = "SOLID"
    with override():
        bpy.ops.view3d.view_axis(type="FRONT")
        bpy.ops.view3d.view_selected()
    yield 1.0
    xdotool("mousemove", 400, 400)
    xdotool("mousemove", 46, 14)
    yield 0.5
    xdotool("click", 1)
    yield 1.0
    xdotool("mousemove", 70, 330)
    xdotool("mousemove", 90, 333)  # Export, below Import
    yield 0.8
    xdotool("click", 1)  # a click opens the submenu at once (hovering waits on Blender's timer)
    yield 1.5
    shot("export_menu", [0, 0, 860, 700], "File > Export with the MilkShape 3D entry")
    xdotool("mousemove", 800, 600)
    xdotool("click", 1)  # outside the menu: closes it (the click lands in the 3D View: reselect after)
    yield 0.8
    for other in bpy.context.view_layer.objects:
        other.select_set(other in ours)

    target = os.path.join(os.path.dirname(ARGS.ms3d), "dwarf_export.ms3d")  # beside it: its textures are found
    windows = len(bpy.context.window_manager.windows)
    with override():
        bpy.ops.export_scene.ms3d("INVOKE_DEFAULT", filepath=target, use_selection=True)
    opened = yield from wait_until(lambda n=windows: len(bpy.context.window_manager.windows) > n, 10)
    assert opened, "export: no file browser window opened"
    browser = bpy.context.window_manager.windows[-1]
    area = find_area("FILE_BROWSER", browser)
    area.spaces.active.show_region_tool_props = True
    checks["export_browser_operator"] = (
        area.spaces.active.active_operator.bl_idname if area.spaces.active.active_operator else None
    )
    files = find_region(area, "WINDOW")
    x, y, width, height = screen_rect(browser, files.x, files.y, files.width, files.height)
    xdotool("mousemove", x + width // 2, y + height - 40)
    yield 3.0
    shot("ms3d_export_browser", screen_rect(browser, 0, 0, browser.width, browser.height), "the export's options")
    with bpy.context.temp_override(window=browser, area=area, region=find_region(area, "WINDOW")):
        bpy.ops.file.cancel()
    closed = yield from wait_until(lambda n=windows: len(bpy.context.window_manager.windows) == n, 10)
    assert closed, "export: the file browser did not close"
    yield 0.5

    with override():
        checks["export"] = sorted(bpy.ops.export_scene.ms3d(filepath=target, use_selection=True))
    meshes = [o for o in ours if o.type == "MESH"]
    made = (sum(len(o.data.vertices) for o in meshes), sum(len(o.data.polygons) for o in meshes))
    before = set(bpy.data.collections)
    with override():
        checks["export_reimport"] = sorted(bpy.ops.import_scene.ms3d(filepath=target))
    again = next(c for c in bpy.data.collections if c not in before)
    meshes = [o for o in again.all_objects if o.type == "MESH"]
    checks["export_counts_equal"] = made == (
        sum(len(o.data.vertices) for o in meshes),
        sum(len(o.data.polygons) for o in meshes),
    )
    checks["export_bones"] = [len(o.data.bones) for o in again.all_objects if o.type == "ARMATURE"]


def source_export_stop(model: bpy.types.Collection, obj: bpy.types.Object):
    """File › Export › Source Model Sources (.qc) on the textured Source model, unedited: its file browser (shot),
    then Accept; the files equal the ones its Decompile… wrote, byte for byte (the decompile stop's folder). ``obj``:
    its mesh, the one made active after its import (it alone is shown: the tour's later imports went into the model's
    collection, an import's collection being linked under the active one)."""
    checks = RESULT["checks"]
    for other in bpy.context.view_layer.objects:
        other.hide_set(other != obj)
        other.select_set(False)
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj
    chosen = os.path.join(os.path.dirname(os.path.abspath(ARGS.out)), "exported")
    windows, browser, area = yield from source_export_browser(chosen, "Source export")
    area.spaces.active.show_region_tool_props = True
    operator = area.spaces.active.active_operator
    checks["source_export_browser_operator"] = operator.bl_idname if operator else None
    xdotool("mousemove", 600, 500)
    yield 2.0
    shot("source_export_browser", screen_rect(browser, 0, 0, browser.width, browser.height), "Source export")
    checks["source_export"] = yield from accept(browser, area, windows, "Source export")
    decompiled = os.path.join(os.path.dirname(os.path.abspath(ARGS.out)), "sources", model.name)
    names = sorted(
        os.path.relpath(os.path.join(folder, f), decompiled) for folder, _, files in os.walk(decompiled) for f in files
    )
    checks["source_export_files"] = names
    checks["source_export_differs"] = [
        n
        for n in names
        if not os.path.isfile(os.path.join(chosen, n))
        or not filecmp.cmp(os.path.join(decompiled, n), os.path.join(chosen, n), shallow=False)
    ]
    yield 0.5
    yield from source_reimport_stop(model, obj)


EDIT_RISE = 10.0  # Source units: how far the edit moves the top half of the model's mesh up


def source_bounds(points: list, scale: float) -> list[list[float]]:
    """The corners (lowest, highest) of ``points`` in Source units, to 1e-4 (an SMD has six decimals). The tour imports
    with Source's own axes (the default), so only the import's scale lies between Blender and Source."""
    lows = [min(p[i] for p in points) / scale for i in range(3)]
    highs = [max(p[i] for p in points) / scale for i in range(3)]
    return [[round(v, 4) for v in lows], [round(v, 4) for v in highs]]


def source_reimport_stop(model: bpy.types.Collection, obj: bpy.types.Object):
    """The model edited as a user edits it: in Edit Mode, the top half of its mesh selected and moved up EDIT_RISE
    Source units with the Move operator (what G does), back to Object Mode; File › Export › Source Model Sources
    into a second folder (its browser, Accept); then that export's reference SMD (the QC's ``studio``) imported by
    an independent reader in this same Blender, Blender Source Tools' ``import_scene.smd`` (GPL, never part of the
    project; registered from ``--bst`` for this stop only, left out when the test has none). Shot: its mesh alone."""
    checks = RESULT["checks"]
    scale = float(model["source_import_scale"])
    checks["source_edit_object"] = obj.name
    world = [obj.matrix_world @ v.co for v in obj.data.vertices]
    checks["source_unedited_bounds"] = source_bounds(world, scale)
    middle = (min(p.z for p in world) + max(p.z for p in world)) / 2
    for other in bpy.context.view_layer.objects:
        other.select_set(other == obj)
    bpy.context.view_layer.objects.active = obj
    with override():
        bpy.ops.object.mode_set(mode="EDIT")
    yield 0.5
    checks["source_edit_mode"] = obj.mode
    mesh = bmesh.from_edit_mesh(obj.data)  # the selection a box select over the top half makes
    for vertex in mesh.verts:
        vertex.select_set((obj.matrix_world @ vertex.co).z > middle)
    mesh.select_flush_mode()
    bmesh.update_edit_mesh(obj.data)
    checks["source_edit_selected"] = sum(v.select for v in mesh.verts)
    with override():
        checks["source_edit_move"] = sorted(bpy.ops.transform.translate(value=(0.0, 0.0, EDIT_RISE * scale)))
        bpy.ops.object.mode_set(mode="OBJECT")
    yield 0.5
    world = [obj.matrix_world @ v.co for v in obj.data.vertices]
    checks["source_edit_bounds"] = source_bounds(world, scale)
    # Blender Source Tools welds an SMD's corners by position (and weights: one bone here), where our import keeps
    # the VVD's vertices (split at UV and normal seams): its vertex count is the mesh's distinct positions.
    positions = {tuple(round(c / scale, 4) for c in p) for p in world}
    triangles = sum(len(p.vertices) - 2 for p in obj.data.polygons)
    checks["source_edit_counts"] = [len(positions), triangles]

    edited = os.path.join(os.path.dirname(os.path.abspath(ARGS.out)), "exported_edited")
    windows, browser, area = yield from source_export_browser(edited, "edited Source export")
    yield 1.0
    checks["source_edit_export"] = yield from accept(browser, area, windows, "edited Source export")
    with open(os.path.join(edited, "metal_box.qc"), encoding="utf-8") as qc:
        reference = re.search(r'^\s*studio\s+"([^"]+)"', qc.read(), re.MULTILINE)
    checks["source_reimport_file"] = reference.group(1) if reference else None
    assert reference, "the edited export's QC names no reference SMD"
    if not ARGS.bst:
        return
    if ARGS.bst not in sys.path:
        sys.path.insert(0, ARGS.bst)
    import io_scene_valvesource

    io_scene_valvesource.register()
    try:
        before = set(bpy.data.objects)
        with override():  # a new armature of its own (not our models'), no bone shapes
            checks["source_reimport"] = sorted(
                bpy.ops.import_scene.smd(
                    filepath=os.path.join(edited, reference.group(1)), append="NEW_ARMATURE", boneMode="NONE"
                )
            )
        made = [o for o in bpy.data.objects if o not in before]
        meshes = [o for o in made if o.type == "MESH"]
        checks["source_reimport_objects"] = sorted(o.type for o in made)
        checks["source_reimport_counts"] = [
            sum(len(o.data.vertices) for o in meshes),
            sum(len(p.vertices) - 2 for o in meshes for p in o.data.polygons),
        ]
        # Its scene is in Source units (one unit a Blender unit, Z up): bounds at scale 1.
        checks["source_reimport_bounds"] = source_bounds(
            [o.matrix_world @ v.co for o in meshes for v in o.data.vertices], 1.0
        )
        checks["source_reimport_materials"] = sorted({s.material.name for o in meshes for s in o.material_slots})
        assert meshes, "Blender Source Tools made no mesh"
        for other in bpy.context.view_layer.objects:
            other.hide_set(other not in meshes)
        # (textured: Blender Source Tools takes an existing material of the SMD's name, our import's metal_box)
        yield from front_view_shot(
            find_area("VIEW_3D"),
            meshes,
            "source_reimport",
            "the edited metal_box (top half moved up) exported, and its SMD imported by Blender Source Tools",
        )
    finally:
        io_scene_valvesource.unregister()


def source_export_browser(folder: str, what: str):
    """File › Export › Source Model Sources into ``folder`` (made first), as its menu entry invokes it; waits for its
    file browser and returns (the window count before it, its window, its area)."""
    os.makedirs(folder, exist_ok=True)
    windows = len(bpy.context.window_manager.windows)
    with override():
        bpy.ops.export_scene.source_qc("INVOKE_DEFAULT", filepath=os.path.join(folder, "metal_box.qc"))
    browser, area = yield from opened_browser(windows, what)
    return windows, browser, area


def opened_browser(windows: int, what: str):
    """Waits for the file browser window an operator's invoke opens; returns (its window, its area)."""
    opened = yield from wait_until(lambda: len(bpy.context.window_manager.windows) > windows, 10)
    assert opened, f"{what}: no file browser window opened"
    browser = bpy.context.window_manager.windows[-1]
    return browser, find_area("FILE_BROWSER", browser)


def accept(browser: bpy.types.Window, area: bpy.types.Area, windows: int, what: str):
    """The browser's Accept (its operator runs), then its window closed; returns the operator's result."""
    with bpy.context.temp_override(window=browser, area=area, region=find_region(area, "WINDOW")):
        result = sorted(bpy.ops.file.execute())
    closed = yield from wait_until(lambda: len(bpy.context.window_manager.windows) == windows, 10)
    assert closed, f"{what}: the file browser did not close"
    return result


GENERATOR = tour()


def finish() -> None:
    RESULT["seconds"] = round(time.monotonic() - STARTED, 1)
    with open(os.path.join(ARGS.out, "result.json"), "w") as handle:
        json.dump(RESULT, handle, indent=2)
    print("gui_tour: done" if not RESULT["errors"] else "gui_tour: FAILED", flush=True)
    bpy.ops.wm.quit_blender()


def step():
    """Timer: run the tour up to its next pause; on an error record it and quit."""
    try:
        if time.monotonic() - STARTED > DEADLINE:
            raise TimeoutError(f"the tour took longer than {DEADLINE} s")
        return next(GENERATOR)
    except StopIteration:
        RESULT["finished"] = True
    except Exception:
        RESULT["errors"].append(traceback.format_exc())
        print(f"gui_tour: error\n{RESULT['errors'][-1]}", file=sys.stderr, flush=True)
    finish()
    return None


os.makedirs(ARGS.out, exist_ok=True)
bpy.context.preferences.view.show_splash = False  # it would cover the view
bpy.context.preferences.use_preferences_save = False  # leave the user configuration as the test installed it
bpy.app.timers.register(step, first_interval=3.0)  # after the window is up
