"""Browse Game Models and the games in the add-on's preferences, in Blender (the bpy wheel).

The preferences need an add-on entry, which the in-tree package has not: ``prefs`` registers the preference classes
under the package's name and adds that entry, as Blender does when the extension is enabled.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from archive_writer import GEntry, WEntry, model_entries, write_gma, write_vpk
from conftest import bpy, samples_dir
from source_writer import character_spec, write_source
from steam_writer import steam_tree

vpk = pytest.importorskip("vpk")  # the PyPI writer (a test dependency): archives made by someone else's code

pytestmark = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")

if bpy is not None:
    from io_ms3d_mdl.blender import game_browser, game_sources, preferences

PREFERENCE_CLASSES = ("IO_MS3D_MDL_search_root", "IO_MS3D_MDL_game", "IO_MS3D_MDL_preferences")
PREFERENCE_OPERATORS = ("IO_MS3D_MDL_OT_search_root", "IO_MS3D_MDL_OT_remove_game")
PREFERENCE_OPERATORS += ("IO_MS3D_MDL_OT_find_steam_games", "IO_MS3D_MDL_OT_add_game")


@pytest.fixture(scope="module")
def preference_classes(addon):
    classes = [getattr(preferences, name) for name in PREFERENCE_CLASSES + PREFERENCE_OPERATORS]
    for cls in classes:
        bpy.utils.register_class(cls)
    yield
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)


@pytest.fixture
def prefs(blender, preference_classes, monkeypatch, tmp_path):
    """The add-on's preferences, empty, with a Steam root that holds no library (until a test makes one)."""
    monkeypatch.setattr(preferences, "ADDON", preferences.IO_MS3D_MDL_preferences.bl_idname)
    entry = bpy.context.preferences.addons.new()
    entry.module = preferences.ADDON
    entry.preferences.steam_folder = str(tmp_path / "no-steam")  # never this machine's Steam
    monkeypatch.setitem(preferences.SESSION, "steam_synced", False)
    game_browser.fill(bpy.context, [])
    game_browser._STATE["mounts"] = None
    yield entry.preferences
    bpy.context.preferences.addons.remove(entry)


def catalog():
    return bpy.context.window_manager.io_ms3d_mdl_game_catalog


def shown_names() -> list[str]:
    cat = catalog()
    return [m.name for m, keep in zip(cat.models, game_browser.shown(cat), strict=True) if keep]


def test_games_added_listed_toggled_and_removed(prefs, tmp_path):
    game = tmp_path / "hl2"
    game.mkdir()
    (game / "gameinfo.txt").write_text('"GameInfo" { game "HL2" }')
    archive = tmp_path / "addon.gma"
    archive.write_bytes(b"GMAD")
    assert bpy.ops.io_ms3d_mdl.add_game(filepath=str(game / "gameinfo.txt")) == {"FINISHED"}  # its folder
    assert bpy.ops.io_ms3d_mdl.add_game(filepath=str(archive)) == {"FINISHED"}
    assert bpy.ops.io_ms3d_mdl.add_game(filepath=str(archive)) == {"FINISHED"}  # listed once
    assert bpy.ops.io_ms3d_mdl.add_game(filepath="", directory=str(game)) == {"FINISHED"}  # a folder: listed once
    assert [(g.path, g.enabled, g.steam) for g in prefs.games] == [
        (str(game), True, False),
        (str(archive), True, False),
    ]
    assert preferences.mounted_games(bpy.context) == (str(game), str(archive))
    prefs.games[0].enabled = False
    assert preferences.mounted_games(bpy.context) == (str(archive),)
    assert [g.title for g in prefs.games] == ["HL2", "addon.gma"]  # the game's title, the archive's name
    assert bpy.ops.io_ms3d_mdl.remove_game(index=1) == {"FINISHED"}
    assert preferences.mounted_games(bpy.context) == ()
    with pytest.raises(RuntimeError, match="Pick a game folder"):
        bpy.ops.io_ms3d_mdl.add_game(filepath=str(tmp_path / "nothing.vpk"), directory=str(tmp_path / "nowhere"))


def test_search_roots_still_work_beside_the_games(prefs, tmp_path):
    assert bpy.ops.io_ms3d_mdl.search_root() == {"FINISHED"}
    prefs.search_roots[0].path = str(tmp_path)
    assert preferences.search_roots(bpy.context) == (str(tmp_path),)
    assert preferences.mounted_games(bpy.context) == ()


def rows(count: int) -> list:
    games = ("Team Fortress 2/tf", "Half-Life 2/hl2", "addon.gma")
    folders = ("models/props", "models/weapons", "models/player/hats")
    return [
        game_sources.ModelRow(f"/g/{i % 3}/{folders[i % 3]}/model_{i:05d}.mdl", games[i % 3], folders[i % 3])
        for i in range(count)
    ]


def test_ten_thousand_models_fill_and_filter_fast(prefs):
    start = time.perf_counter()
    game_browser.fill(bpy.context, rows(12_000))
    filled = time.perf_counter() - start
    cat = catalog()
    assert len(cat.models) == 12_000 and cat.index == -1
    first = cat.models[0]
    assert (first.game, first.folder, first.name) == ("addon.gma", "models/player/hats", "model_00002.mdl")
    cat.search = "model_0001"
    start = time.perf_counter()
    flags = game_browser.shown(cat)
    filtered = time.perf_counter() - start
    assert sum(flags) == 10
    cat.game = "Half-Life 2/hl2"
    assert shown_names() == ["model_00010.mdl", "model_00013.mdl", "model_00016.mdl", "model_00019.mdl"]
    cat.search, cat.game, cat.folder = "*_0000?.MDL", "*", "WEAPONS"
    assert shown_names() == ["model_00001.mdl", "model_00004.mdl", "model_00007.mdl"]
    assert bpy.ops.io_ms3d_mdl.check_game_models(check=True) == {"FINISHED"}
    assert [m.name for m in cat.models if m.checked] == shown_names()
    assert bpy.ops.io_ms3d_mdl.check_game_models(check=False) == {"FINISHED"}
    assert not any(m.checked for m in cat.models)
    # The list's own filter hook gives Blender the same flags.
    assert sum(bool(f) for f in game_browser.filter_flags(cat)) == 3
    print(f"12,000 models: filled in {filled * 1000:.0f} ms, filtered in {filtered * 1000:.1f} ms")
    assert filled < 1.0 and filtered < 0.1


def loose_game(root: Path) -> Path:
    """A game folder with gameinfo.txt and two models written by the test writer."""
    game = root / "mygame"
    write_source(character_spec(), game / "models" / "people", "guy")
    write_source(character_spec(), game / "models" / "props", "crate")
    (game / "gameinfo.txt").write_text(
        '"GameInfo"\n{\n game "My Game"\n FileSystem\n {\n  SearchPaths\n  {\n   game |gameinfo_path|.\n  }\n }\n}\n'
    )
    return game


def test_a_click_imports_with_the_import_operators_options_and_checked_ones_import_together(prefs, tmp_path):
    game = loose_game(tmp_path)
    guy, crate = game / "models/people/guy.mdl", game / "models/props/crate.mdl"
    game_browser.fill(
        bpy.context,
        [
            game_sources.ModelRow(str(crate), "mygame", "models/props"),
            game_sources.ModelRow(str(guy), "mygame", "models/people"),
        ],
    )
    cat = catalog()
    assert [m.name for m in cat.models] == ["guy.mdl", "crate.mdl"]
    # The options File > Import > Source Model last used (and shows) are the ones the browser imports with.
    bpy.context.window_manager.operator_properties_last("import_scene.source_mdl").units = "SOURCE"
    cat.index = 0  # what a click on the row does
    assert "source_version" in bpy.data.collections["guy"] and "crate" not in bpy.data.collections
    assert tuple(bpy.data.objects["guy"].data.bones["spine"].head_local) == pytest.approx((0, 0, 2))  # unscaled
    cat.import_on_click = False
    cat.index = 1
    assert "crate" not in bpy.data.collections
    cat.models[0].checked = cat.models[1].checked = True
    assert bpy.ops.io_ms3d_mdl.import_game_models() == {"FINISHED"}
    assert {"guy.001", "crate"} <= set(bpy.data.collections.keys())
    assert bpy.data.objects["crate"].data.bones["spine"].head_local.z == pytest.approx(2)


def test_nothing_checked_or_a_failed_import_changes_nothing(prefs, tmp_path):
    bad = tmp_path / "models" / "bad.mdl"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"IDST" + bytes(100))
    game_browser.fill(bpy.context, [game_sources.ModelRow(str(bad), "mygame", "models")])
    before = len(bpy.data.objects), len(bpy.data.collections)
    assert bpy.ops.io_ms3d_mdl.import_game_models() == {"CANCELLED"}  # with a warning: check some first
    catalog().index = 0  # a click on a broken model: reported, not raised
    with pytest.raises(RuntimeError, match=r"bad\.mdl"):
        bpy.ops.io_ms3d_mdl.import_game_models(path=str(bad))
    assert (len(bpy.data.objects), len(bpy.data.collections)) == before


def test_steam_games_are_found_and_refreshed_with_their_toggles_kept(prefs, tmp_path):
    steam = steam_tree(tmp_path, library="Library Two")
    (steam / "steamapps" / "common" / "Source SDK" / "bin").mkdir(parents=True)  # a tool, not a game
    hl2 = steam / "steamapps" / "common" / "Half-Life 2" / "hl2"
    tf = tmp_path / "Library Two" / "steamapps" / "common" / "Team Fortress 2" / "tf"
    prefs.steam_folder = str(steam)
    mine = tmp_path / "mymod"
    mine.mkdir()
    assert bpy.ops.io_ms3d_mdl.add_game(filepath="", directory=str(mine)) == {"FINISHED"}
    # The first import (or browser) looks for Steam once, by itself.
    assert preferences.mounted_games(bpy.context) == (str(mine), str(hl2), str(tf))
    assert [(g.title, g.steam, g.enabled) for g in prefs.games] == [
        ("mymod", False, True),
        ("Half-Life 2", True, True),
        ("Team Fortress 2", True, True),
    ]
    prefs.games[1].enabled = False
    (tf / "gameinfo.txt").unlink()  # uninstalled
    assert bpy.ops.io_ms3d_mdl.find_steam_games() == {"FINISHED"}
    assert [(g.title, g.enabled) for g in prefs.games] == [("mymod", True), ("Half-Life 2", False)]
    assert preferences.mounted_games(bpy.context) == (str(mine),)


def archive_of(folder: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    vpk.new(str(folder)).save(str(target))
    return target


def two_models(root: Path) -> Path:
    write_source(character_spec(), root / "models" / "people", "guy")
    write_source(character_spec(), root / "models" / "props", "crate")
    return root


def test_a_mounted_vpk_lists_its_models_and_imports_them(prefs, tmp_path):
    pak = archive_of(two_models(tmp_path / "content"), tmp_path / "addons" / "pak01_dir.vpk")
    assert bpy.ops.io_ms3d_mdl.mount_game(filepath=str(pak)) == {"FINISHED"}  # the window's Mount...
    assert [(g.title, g.path) for g in prefs.games] == [("pak01_dir.vpk", str(pak))]
    cat = catalog()
    assert [(m.name, m.folder, m.game) for m in cat.models] == [
        ("guy.mdl", "models/people", "pak01_dir.vpk"),
        ("crate.mdl", "models/props", "pak01_dir.vpk"),
    ]
    assert cat.models[0].path == str(pak / "models" / "people" / "guy.mdl")  # the archive as a folder
    cat.search = "cra"
    assert shown_names() == ["crate.mdl"]
    cat.search = ""
    before = set(bpy.data.objects)
    cat.index = 0  # a click
    guy = bpy.data.collections["guy"]
    assert {o.name for o in set(bpy.data.objects) - before} == {"guy", "body_ref", "hat_ref", "eyes"}
    assert len(guy.all_objects) == 4
    cat.import_on_click = False
    cat.models.foreach_set("checked", [True, True])
    assert bpy.ops.io_ms3d_mdl.import_game_models() == {"FINISHED"}
    assert {"guy.001", "crate"} <= set(bpy.data.collections.keys())
    assert len(bpy.data.collections["crate"].all_objects) == 4


def test_a_mounted_game_lists_loose_models_and_its_search_path_archives(prefs, tmp_path):
    game = loose_game(tmp_path)
    (game / "gameinfo.txt").write_text(
        '"GameInfo"\n{\n game "My Game"\n FileSystem\n {\n  SearchPaths\n  {\n'
        "   game |gameinfo_path|.\n   game |gameinfo_path|mygame_pak.vpk\n  }\n }\n}\n"
    )
    extra = tmp_path / "extra"
    write_source(character_spec(), extra / "models" / "weapons", "knife")
    archive_of(extra, game / "mygame_pak_dir.vpk")
    assert bpy.ops.io_ms3d_mdl.mount_game(filepath=str(game / "gameinfo.txt")) == {"FINISHED"}
    cat = catalog()
    rows = sorted((m.name, m.folder, m.game) for m in cat.models)
    assert rows == [
        ("crate.mdl", "models/props", "My Game"),
        ("guy.mdl", "models/people", "My Game"),
        ("knife.mdl", "models/weapons", "My Game"),
    ]
    cat.folder = "weap"
    assert shown_names() == ["knife.mdl"]
    knife = next(m for m in cat.models if m.name == "knife.mdl")
    assert knife.path == str(game / "mygame_pak_dir.vpk" / "models" / "weapons" / "knife.mdl")
    assert bpy.ops.io_ms3d_mdl.import_game_models(path=knife.path) == {"FINISHED"}
    assert len(bpy.data.collections["knife"].all_objects) == 4
    # Disabled in the preferences: the browser lists nothing from it any more.
    prefs.games[0].enabled = False
    assert bpy.ops.io_ms3d_mdl.refresh_game_models() == {"FINISHED"}
    assert len(cat.models) == 0


def test_the_real_addon_vpk_lists_and_imports_textured(prefs):
    knife = samples_dir() / "vpk" / "SirPlease__L4D2-Competitive-Rework" / "addons" / "knife.vpk"
    assert bpy.ops.io_ms3d_mdl.mount_game(filepath=str(knife)) == {"FINISHED"}
    cat = catalog()
    assert [(m.name, m.folder) for m in cat.models] == [
        ("v_knife_t.mdl", "models/v_models"),
        ("w_knife_t.mdl", "models/w_models/weapons"),
    ]
    cat.index = 0
    model = bpy.data.collections["v_knife_t"]
    meshes = [o for o in model.all_objects if o.type == "MESH"]
    assert sum(len(o.data.polygons) for o in meshes) == 1806
    images = {
        n.image.name
        for o in meshes
        for s in o.material_slots
        for n in s.material.node_tree.nodes
        if n.type == "TEX_IMAGE" and n.image
    }
    assert images, "the material's textures come from the archive"


def test_a_gma_and_a_multi_part_vpk_list_together_filtered_by_game(prefs, tmp_path):
    """Garry's Mod addons come as .gma; a game's VPK keeps its data in numbered parts. Both list in one window."""
    entries = model_entries(two_models(tmp_path / "content"))
    gma = write_gma(tmp_path / "addons" / "props.gma", [GEntry(name, data) for name, data in entries])
    knife = model_entries(write_source(character_spec(), tmp_path / "more" / "models" / "weapons", "knife").parents[2])
    pak = write_vpk(
        tmp_path / "game", "pak01", [WEntry(name, data, part=i % 2) for i, (name, data) in enumerate(knife)]
    )
    for path in (gma, pak):
        assert bpy.ops.io_ms3d_mdl.mount_game(filepath=str(path)) == {"FINISHED"}
    cat = catalog()
    assert sorted((m.game, m.name) for m in cat.models) == [
        ("pak01_dir.vpk", "knife.mdl"),
        ("props.gma", "crate.mdl"),
        ("props.gma", "guy.mdl"),
    ]
    cat.game = "props.gma"
    assert shown_names() == ["guy.mdl", "crate.mdl"]
    cat.game = "pak01_dir.vpk"
    assert shown_names() == ["knife.mdl"]
    cat.models.foreach_set("checked", [True] * len(cat.models))
    assert bpy.ops.io_ms3d_mdl.import_game_models() == {"FINISHED"}  # from both archives in one call
    assert {"guy", "crate", "knife"} <= set(bpy.data.collections.keys())
    assert all(len(bpy.data.collections[n].all_objects) == 4 for n in ("guy", "crate", "knife"))


def test_more_models_than_the_listing_budget_keep_the_first_rows_and_say_why(prefs, tmp_path):
    """The models are charged before their rows are made: an archive past the budget lists none of its own, the
    archives before it stay listed, and the window says why the list stops short."""
    from archive_worst_cases import listed

    from io_ms3d_mdl.budget import Budget, using_budget

    pak = archive_of(two_models(tmp_path / "content"), tmp_path / "addons" / "pak01_dir.vpk")
    crowd = listed(1500)(tmp_path)  # 1,500 models; the budget at Work Limit 0.01 lists 1,000
    prefs.games.add().path = str(pak)
    prefs.games.add().path = str(crowd)
    with using_budget(Budget(0.01)):
        assert game_browser.refresh(bpy.context, force=True)
    assert [m.name for m in catalog().models] == ["guy.mdl", "crate.mdl"]
    assert "models listed of 1,502 models exceeds the work budget of 1,000" in game_browser._STATE["note"]
    assert game_browser.refresh(bpy.context, force=True) and len(catalog().models) == 1502  # the default budget
    assert game_browser._STATE["note"] == ""
