"""The add-on in real Blenders (Debian's 4.3 and 5.2), not the ``bpy`` wheel: validation, install, imports, batch, UI.

The wheel never draws a panel, opens a file browser or installs an extension the way a user does; this lane runs
subprocesses of a real Blender for that, every test once per Blender. A Blender is a folder holding the wrappers
``scripts/real_blender_setup.sh`` makes (``blender``, headless, and ``blender-gui``, a window on Xvfb);
``IO_MS3D_MDL_REAL_BLENDER`` lists the folders, ``os.pathsep``-separated (default
``~/.cache/real-blender:~/.cache/real-blender-sid``, Debian trixie's 4.3 and sid's 5.2). A missing one skips its
tests with the reason, ``off`` skips them all; with ``IO_MS3D_MDL_REQUIRE_REAL_BLENDER=1`` (CI) a missing Blender
fails instead. It does not use the ``bpy`` wheel.

Every Blender run gets its own user configuration (``BLENDER_USER_RESOURCES``), HOME, XDG folders and TMPDIR
under the test's temporary folder, so no preference, extension or crash file reaches the machine or another test.

The extension is the zip ``scripts/build_extension.py`` builds (once per run), or ``IO_MS3D_MDL_EXTENSION_ZIP``.
``test_gui_tour`` keeps its screenshots in its temporary folder (the path is in its output with ``-rP``) and, when
``IO_MS3D_MDL_SCREENSHOTS=DIR`` is set, writes small cropped copies to DIR (relative to the checkout) for the
README: ``IO_MS3D_MDL_SCREENSHOTS=docs/screenshots`` (the first listed Blender's; the others' go to
``DIR/<their folder's name>``). Its last stop reads the edited model's Source export back with Blender Source Tools
(``tests/bst_oracle.py``) inside the real Blender: without it that sub-step is left out, saying why, unless
``IO_MS3D_MDL_REQUIRE_BST=1`` (CI), which fails instead.

    cd tests && python -m pytest -q test_real_blender.py
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from bst_oracle import missing_bst, optional_bst
from conftest import ROOT, samples_dir
from steam_writer import steam_tree

SETTING = os.environ.get(
    "IO_MS3D_MDL_REAL_BLENDER", os.pathsep.join(["~/.cache/real-blender", "~/.cache/real-blender-sid"])
)
TURNED_OFF = SETTING.lower() in ("0", "off", "no", "false")  # the wheel suite's runs leave this lane to its own
# Expanded now, with the real HOME (runs get a temporary one).
LANES = [] if TURNED_OFF else [Path(os.path.expanduser(folder)) for folder in SETTING.split(os.pathsep) if folder]
SCRIPTS = Path(__file__).resolve().parent / "real_blender"
ADDON = "bl_ext.user_default.io_ms3d_mdl"
LANE_WHEEL = "5.0"  # it drives its own Blender binary, so the suite's other wheel passes leave it out

METAL_BOX = "source/Igrium__portal_nrtx/models/props/metal_box.mdl"
CIVILIAN = "source/Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"
GOLDSRC = "goldsrc/Pi0h1__halflife/models/hgrunt.mdl"
DWARF = "ms3d/akadjoker__H3DView/media/dwarf.ms3d"
KNIFE_VPK = "vpk/SirPlease__L4D2-Competitive-Rework/addons/knife.vpk"  # an L4D2 add-on: two models, textured
GUN = "coverage/ms3d/akadjoker__IrrlichtGameObject/gun.ms3d"
VTMB = "vtmb/miracleflame__VTMB-Unofficial-Patch-by-Wesp/Basic_Patch/models/character/npc/common/"  # a PCX skin, decoded by us and packed as a PNG


def _wheel_version() -> str | None:
    try:
        return importlib.metadata.version("bpy")
    except importlib.metadata.PackageNotFoundError:
        return None


def _skip_reason(lane: Path | None) -> str | None:
    if lane is None:
        return f"real-Blender lane turned off (IO_MS3D_MDL_REAL_BLENDER={SETTING})"
    wheel = _wheel_version()
    if wheel is not None and not wheel.startswith(LANE_WHEEL):
        return (
            f"the real-Blender lane runs once per suite, in the bpy {LANE_WHEEL} environment's pass (this is {wheel})"
        )
    if not os.access(lane / "blender", os.X_OK):
        return (
            f"real Blender not found: no executable {lane / 'blender'} (run scripts/real_blender_setup.sh trixie or "
            "sid, or set IO_MS3D_MDL_REAL_BLENDER to the folders holding their blender and blender-gui wrappers)"
        )
    return None


def skip_or_fail(reason: str) -> None:
    """Skip; but fail where the lane must run (CI sets IO_MS3D_MDL_REQUIRE_REAL_BLENDER=1), unless turned off."""
    if os.environ.get("IO_MS3D_MDL_REQUIRE_REAL_BLENDER") and not TURNED_OFF and "runs once per suite" not in reason:
        pytest.fail(f"IO_MS3D_MDL_REQUIRE_REAL_BLENDER is set but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module", autouse=True, params=LANES or [None], ids=lambda lane: lane.name if lane else "off")
def real_blender(request) -> Path:
    """Every test runs once per listed Blender (its folder). Before anything else in this module (the zip build
    included): skip without that Blender."""
    reason = _skip_reason(request.param)
    if reason:
        skip_or_fail(reason)
    return request.param


@pytest.fixture
def blender(real_blender) -> Path:
    return real_blender / "blender"


@pytest.fixture
def blender_gui(real_blender) -> Path:
    return real_blender / "blender-gui"


# Lines that mean something went wrong, wherever they appear in Blender's output.
BAD_LINES = re.compile(
    r"Traceback \(most recent call last\)"
    r"|^Error\b|^ERROR\b|^WARN\b|^Warning\b"  # operator reports and Blender's own (CLOG) errors and warnings
    r"|^\d+:\d+\.\d+ +[\w.]+ +\| (WARNING|ERROR|FATAL)\b"  # the same, as 5.x logs them: after a time stamp
    r"|\b\w*(Error|Exception|Warning): "  # Python exceptions and warnings (DeprecationWarning: ...)
    r"|unable to get Python class|has been registered before|Exception in module|property not found"
    r"|Segmentation fault|blender\.crash\.txt",
    re.MULTILINE,
)


def bad_lines(log: str, allowed: re.Pattern[str] | None = None) -> list[str]:
    """The log's lines that report an error or warning (``allowed`` ones excepted)."""
    return [
        line
        for line in log.splitlines()
        if BAD_LINES.search(line) and not (allowed is not None and allowed.match(line))
    ]


def importer_warnings(*models: str) -> re.Pattern[str]:
    """The importer's own report about these sample files (a texture format it cannot decode, a material the
    sample tree lacks): expected data warnings, not defects; anything else warned about fails the test."""
    names = "|".join(re.escape(os.path.basename(m)) for m in models)
    return re.compile(rf"(Info|Warning): ({names}): ")


def sample(relative: str) -> Path:
    path = samples_dir() / relative
    if not path.is_file():
        pytest.fail(f"sample missing: {path}")
    return path


def isolated_env(base: Path) -> dict[str, str]:
    """A clean environment whose user configuration, HOME, caches and temporary files all live under ``base``."""
    home = base / "home"
    env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TERM") if key in os.environ}
    env.update(
        HOME=str(home),
        BLENDER_USER_RESOURCES=str(base / "user"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        TMPDIR=str(base / "tmp"),
    )
    for folder in (home, base / "user", base / "tmp"):
        folder.mkdir(parents=True, exist_ok=True)
    return env


def run(command: list, env: dict[str, str], timeout: float = 120) -> tuple[int, str]:
    """Run a Blender command in its own process group; stdout and stderr together (Blender interleaves its
    reports on both). Past ``timeout`` the whole group (xvfb-run, Xvfb, Blender, batch workers) is killed."""
    process = subprocess.Popen(
        [str(c) for c in command],
        env=env,
        cwd=env["TMPDIR"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"timed out after {timeout} s: {' '.join(map(str, command))}\n{output}")
    return process.returncode, output


def crash_files(env: dict[str, str]) -> list[str]:
    return sorted(str(p) for p in Path(env["TMPDIR"]).glob("*.crash.txt"))


# --- fixtures ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def extension_zip(tmp_path_factory) -> Path:
    """The release zip, built once by scripts/build_extension.py (or the one IO_MS3D_MDL_EXTENSION_ZIP names)."""
    given = os.environ.get("IO_MS3D_MDL_EXTENSION_ZIP")
    if given:
        return Path(given).resolve()
    out = tmp_path_factory.mktemp("dist")
    command = [sys.executable, str(ROOT / "scripts" / "build_extension.py"), "--output-dir", str(out)]
    build = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, f"build_extension.py failed:\n{build.stdout}{build.stderr}"
    (zip_path,) = out.glob("*.zip")
    if build.stderr.strip():
        print(f"build_extension.py said:\n{build.stderr}")  # e.g. files not shipped because git does not track them
    return zip_path


@pytest.fixture
def installed(blender, extension_zip, tmp_path) -> dict[str, str]:
    """A fresh user configuration with the zip installed (``extension install-file``) and enabled."""
    env = isolated_env(tmp_path)
    code, log = run([blender, "--command", "extension", "install-file", "-r", "user_default", "-e", extension_zip], env)
    assert code == 0 and 'Installed "io_ms3d_mdl"' in log, log
    assert not bad_lines(log), log
    assert (tmp_path / "user" / "extensions" / "user_default" / "io_ms3d_mdl" / "blender_manifest.toml").is_file()
    return env


# --- extension validate / install --------------------------------------------------------------------------------


def test_validate_checkout(blender, tmp_path):
    code, log = run([blender, "--factory-startup", "--command", "extension", "validate", ROOT], isolated_env(tmp_path))
    assert code == 0 and "Success parsing TOML" in log and not bad_lines(log), log


def test_validate_rejects_a_broken_manifest(blender, tmp_path):
    """The validate check above can fail: a manifest without its id does."""
    broken = tmp_path / "broken"
    broken.mkdir()
    manifest = (ROOT / "blender_manifest.toml").read_text()
    (broken / "blender_manifest.toml").write_text(re.sub(r'(?m)^id = ".*"\n', "", manifest))
    (broken / "__init__.py").write_text("")
    code, log = run(
        [blender, "--factory-startup", "--command", "extension", "validate", broken], isolated_env(tmp_path)
    )
    assert code != 0 and 'missing "id"' in log, log


def test_validate_built_zip(blender, extension_zip, tmp_path):
    names = zipfile.ZipFile(extension_zip).namelist()
    assert "blender_manifest.toml" in names and "io_ms3d_mdl/blender/operators.py" in names, names
    cmd = [blender, "--factory-startup", "--command", "extension", "validate", extension_zip]
    code, log = run(cmd, isolated_env(tmp_path))
    assert code == 0 and "Success parsing TOML" in log and not bad_lines(log), log


def test_installed_zip_enables_from_the_user_repository(blender, installed, tmp_path):
    """install-file put it in the isolated user repository, and a plain start (user preferences) enables it."""
    script = SCRIPTS / "addon_state.py"
    code, log = run([blender, "--background", "--python-exit-code", "1", "--python", script], installed)
    assert code == 0 and not bad_lines(log), log
    state = json.loads(log.split("STATE ", 1)[1].splitlines()[0])
    assert state["enabled"], f"the extension is installed but not enabled:\n{log}"
    assert state["file"] and Path(state["file"]).is_relative_to(tmp_path / "user"), state  # not the checkout
    assert all(state["classes"].values()) and state["menu"] and state["preferences"], state
    assert not crash_files(installed)


# --- the operators on real files -----------------------------------------------------------------------------------


def test_operators_import_real_files(blender, installed, tmp_path):
    models = [sample(METAL_BOX), sample(CIVILIAN), sample(DWARF), sample(GUN)]
    out = tmp_path / "imports.json"
    command = [blender, "--background", "--python-exit-code", "1", "--python", SCRIPTS / "import_samples.py", "--"]
    code, log = run([*command, out, *models], installed)
    assert code == 0 and out.is_file(), log
    assert not bad_lines(log, importer_warnings(*models)), log
    result = json.loads(out.read_text())
    assert result["enabled"] and result["operators"] == [True, True], result
    assert Path(result["module_file"]).is_relative_to(tmp_path / "user"), result["module_file"]
    box, civilian, dwarf, gun = (result["models"][m.name] for m in models)
    for name, model in result["models"].items():
        assert model["result"] == ["FINISHED"], (name, model)
    assert box["meshes"] == 1 and box["triangles"] == 5064 and box["source_models"] == ["metal_box"], box
    assert box["collision"] == ["WIRE"] and civilian["collision"] == ["WIRE"] * 17, (box, civilian)
    colour = [size for name, size in box["images"].items() if name.startswith("metal_box_color")]
    assert colour == [[1024, 1024]], box["images"]  # decoded from the VTF (the image's format may change)
    assert civilian["armatures"] == 1 and civilian["bones"] == 59 and civilian["triangles"] == 8902, civilian
    assert civilian["objects"] == 15 + 17 and civilian["actions"] >= 1, civilian  # 17 collision solids
    # Weights as the wheel builds them: the body's and head's through the attribute conversion (see weights.py),
    # which leaves no attribute behind.
    assert civilian["weights"] == [4, 68, 9033, 5540.0], civilian["weights"]
    assert dwarf["weights"] == [3, 39, 1249, 1249.0], dwarf["weights"]
    assert not any("weights" in name for m in result["models"].values() for name in m["attributes"]), result
    assert dwarf["armatures"] == 1 and dwarf["bones"] == 44 and dwarf["actions"] == 1, dwarf
    assert dwarf["triangles"] == 1664 and dwarf["images"].get("dwarf.jpg") == [512, 512], dwarf
    assert gun["images"] == {"new skin.png": [256, 256]}, gun  # our PNG, decoded by this Blender
    assert not crash_files(installed)


def test_operators_import_bloodlines(blender, installed, tmp_path):
    """Bloodlines (MDL 2531) characters through the installed extension: mesh from the model's own vertices, VTX
    107 strips, the skeleton bound at rest, the default sequence's animation built, the .phy as collision."""
    models = [sample(VTMB + "citizen/female3/female_citizen_3.mdl"), sample(VTMB + "swat/swat3.mdl")]
    out = tmp_path / "imports.json"
    command = [blender, "--background", "--python-exit-code", "1", "--python", SCRIPTS / "import_samples.py", "--"]
    code, log = run([*command, out, *models], installed)
    assert code == 0 and out.is_file(), log
    result = json.loads(out.read_text())
    female, swat = (result["models"][m.name] for m in models)
    for model in (female, swat):
        assert model["result"] == ["FINISHED"] and model["armatures"] == 1 and model["actions"] >= 1, model
    assert (female["bones"], female["triangles"], swat["bones"], swat["triangles"]) == (77, 6080, 63, 5804)
    assert female["collision"] and swat["collision"], (female["collision"], swat["collision"])
    assert not crash_files(installed)


# --- scripts/batch_import.py inside Blender, with the extension enabled at the same time -----------------------------


@pytest.mark.parametrize("jobs", [1, 2])  # --jobs 1 once registered a second copy over the extension
def test_batch_import_beside_the_installed_extension(blender, installed, tmp_path, jobs):
    """The checkout's batch script, run as documented (``blender --background --python scripts/batch_import.py --
    ARGS``), in a Blender whose user preferences enable the installed extension: two copies of the add-on's code in
    one process must not clash, and any traceback counts even when the exit status is 0."""
    models = [sample(METAL_BOX), sample(CIVILIAN), sample(DWARF)]
    out = tmp_path / "converted"
    script = ROOT / "scripts" / "batch_import.py"
    command = [blender, "--background", "--python", script, "--", "--jobs", jobs, "-o", out, *models]
    code, log = run(command, installed, timeout=300)
    problems = [f"exit status {code}"] if code else []
    problems += bad_lines(log, importer_warnings(*models))
    if "3 of 3 files converted" not in log:
        problems.append("no '3 of 3 files converted' summary")
    report = out / "report.json"
    statuses = [f["status"] for f in json.loads(report.read_text())["files"]] if report.is_file() else None
    if statuses != ["ok"] * 3:
        problems.append(f"report.json statuses: {statuses}")
    blends = sorted(p.name for p in out.rglob("*.blend"))
    if blends != ["civilian.blend", "dwarf.blend", "metal_box.blend"]:
        problems.append(f"outputs: {blends}")
    if crash_files(installed):
        problems.append(f"crash files: {crash_files(installed)}")
    summary = "\n".join(problems)
    assert not problems, f"batch_import.py --jobs {jobs}:\n{summary}\n--- full output ---\n{log}"


# --- the user interface in a window ------------------------------------------------------------------------------

GUI_SHOTS = ("import_menu", "ms3d_browser", "source_browser", "source_browser_options", "object_tab", "collection_tab")
GUI_SHOTS += ("sidebar", "decompile_browser")
GUI_SHOTS += ("material_preview", "physics", "preferences", "sidebar_game_models", "game_browser")
GUI_SHOTS += ("goldsrc", "bloodlines", "export_menu", "ms3d_export_browser", "source_export_browser")
GUI_SHOTS += ("source_reimport",)  # Blender Source Tools' import of the edited model's export: only with it set up
DOC_WIDTH = 900  # README images: at most this wide,
DOC_BYTES = 200_000  # and this large


def image_spread(path: Path, crop: list[int]) -> float:
    """Standard deviation (0..1) of the cropped screenshot's pixels: about 0 for a blank (one-colour) image."""
    x, y, w, h = crop
    command = ["convert", path, "-crop", f"{w}x{h}+{x}+{y}", "+repage", "-format", "%[fx:standard_deviation]", "info:"]
    return float(subprocess.run([str(c) for c in command], capture_output=True, text=True, check=True).stdout)


def small_png(source: Path, crop: list[int], target: Path) -> None:
    """Crop, shrink to DOC_WIDTH and write a PNG under DOC_BYTES (fewer colours, then smaller, when needed)."""
    x, y, w, h = crop
    base = ["convert", str(source), "-crop", f"{w}x{h}+{x}+{y}", "+repage", "-strip"]
    for width, palette in ((DOC_WIDTH, False), (DOC_WIDTH, True), (700, True), (500, True)):
        resize = ["-resize", f"{width}x>"] if w > width else []
        colours = ["-colors", "256", f"PNG8:{target}"] if palette else [str(target)]
        subprocess.run([*base, *resize, *colours], check=True)
        if target.stat().st_size <= DOC_BYTES:
            return
    raise AssertionError(f"{target} stays over {DOC_BYTES} bytes")


@pytest.fixture
def gui_tools(blender_gui):
    missing = [tool for tool in ("xvfb-run", "import", "convert", "xdotool") if shutil.which(tool) is None]
    if missing or not os.access(blender_gui, os.X_OK):
        skip_or_fail(
            f"the GUI tour needs {blender_gui} and {', '.join(missing) or 'its tools'} (setup.sh installs them)"
        )


FEMALE_CITIZEN = VTMB + "citizen/female3/female_citizen_3.mdl"
VTMB_REPO = "miracleflame+VTMB-Unofficial-Patch-by-Wesp"
FEMALE_BODY = "materials/models/character/npc/common/citizen/female3/femcitizen3body"


def bloodlines_game(root: Path) -> tuple[Path, bool]:
    """female_citizen_3 in a loose Bloodlines game folder (``Vampire/models/...``), with its body's material and
    Troika texture (.vmt, .tth, .ttz) read from a local fetch of the Unofficial Patch's repository when there is one
    (the shared samples hold models only; the patch ships no texture for her head). Returns the model and whether
    the texture is there."""
    model = sample(FEMALE_CITIZEN)
    game = root / "Vampire"
    target = game / "models" / Path(FEMALE_CITIZEN).relative_to(VTMB.split("/models/")[0] + "/models")
    target.parent.mkdir(parents=True)
    for companion in model.parent.glob(model.stem + ".*"):
        shutil.copy(companion, target.parent / companion.name)
    repo = Path(os.environ.get("IO_MS3D_MDL_MIRROR", ROOT.parent / ".mirror")) / VTMB_REPO / "repo"
    if not repo.is_dir():
        return target, False
    texture = game / FEMALE_BODY
    texture.parent.mkdir(parents=True)
    for ext in (".vmt", ".tth", ".ttz"):
        blob = subprocess.run(
            ["git", "-C", str(repo), "show", f"HEAD:Basic_Patch/{FEMALE_BODY}{ext}"], capture_output=True, check=True
        )
        texture.with_suffix(ext).write_bytes(blob.stdout)
    return target, True


def test_gui_tour(blender_gui, gui_tools, installed, tmp_path):
    """File > Import, both file browsers with their options, the three Source Model panels and Material Preview in
    a real window: no Python error, traceback or warning in Blender's log, every panel drew, every screenshot has
    content. Screenshots stay in ``tmp_path/shots``; small crops go to ``tmp_path/crops`` and, when
    IO_MS3D_MDL_SCREENSHOTS is set, to that folder."""
    # Copies, so the file browsers in the screenshots show a neutral folder rather than where the corpus lives.
    game, media = tmp_path / "game", tmp_path / "media"
    shutil.copytree(sample(METAL_BOX).parents[2], game)
    shutil.copytree(sample(DWARF).parent, media)
    vpk = tmp_path / "addons" / "knife.vpk"
    vpk.parent.mkdir()
    shutil.copy(sample(KNIFE_VPK), vpk)
    mdl, ms3d = game / sample(METAL_BOX).relative_to(sample(METAL_BOX).parents[2]), media / sample(DWARF).name
    shots = tmp_path / "shots"
    rigged = sample(CIVILIAN)
    command = [blender_gui, "--python", SCRIPTS / "gui_tour.py", "--", "--out", shots, "--mdl", mdl, "--ms3d", ms3d]
    command += ["--rigged", rigged, "--goldsrc", sample(GOLDSRC), "--vpk", vpk, "--steam", steam_tree(tmp_path)]
    vampire, textured = bloodlines_game(tmp_path)
    command += ["--bloodlines", vampire]
    # The independent reader of the edited Source export; without it (not set up, and not required) that sub-step
    # is left out, saying so.
    bst = optional_bst()
    if bst is None:
        print(f"GUI tour: no re-import of the edited Source export: {missing_bst()}")
    else:
        command += ["--bst", bst]
    code, log = run(command, installed, timeout=620)
    print(f"GUI tour screenshots: {shots}\n{log}")
    (shots / "blender.log").write_text(log)
    result_file = shots / "result.json"
    assert result_file.is_file(), f"the tour wrote no result (exit status {code}):\n{log}"
    result = json.loads(result_file.read_text())
    assert not result["errors"], "\n".join(result["errors"])
    assert code == 0 and result["finished"], log
    # Debian's Blender has no translations: drawing the Preferences window warns that its language matches no item.
    no_languages = (
        r"(WARN \(bpy\.rna\): .*|.*bpy\.rna +\| WARNING) current value '\d+' matches no enum in 'PreferencesView', "
        r"'\(null\)', 'language'"
    )
    # 5.x uploads a DDS image's blocks to the GPU as they are, read again from its file: ours are packed, so Blender
    # says so and decodes them itself (as it does for a format the GPU lacks: software GL has no BC7), as 4.x always
    # did. The textures show either way (the Material Preview shot).
    gpu_decodes = r".*image\.gpu +\| WARNING DDS image '' (failed to load data from file|falling back to " + (
        r"uncompressed|is not in a supported GPU compression format)"
    )
    expected = importer_warnings(mdl, rigged, GOLDSRC, "v_knife_t.mdl", vampire).pattern
    allowed = re.compile(f"{expected}|{no_languages}|{gpu_decodes}")
    assert not bad_lines(log, allowed), log
    assert not crash_files(installed)

    checks = result["checks"]
    assert checks["import"] == ["FINISHED"] and checks["model"] == "metal_box", checks
    assert checks["ms3d_browser_operator"] == "IMPORT_SCENE_OT_ms3d", checks
    assert checks["source_browser_operator"] == "IMPORT_SCENE_OT_source_mdl", checks
    assert checks["sidebar_category"] == "Source" and checks["shading"] == "MATERIAL", checks
    # a click on the sidebar's Decompile…: its folder browser (at first beside the model), then Accept writes the
    # model's sources into <folder>/metal_box
    assert checks["decompile_browser_operator"] == "IO_MS3D_MDL_OT_source_decompile", checks
    assert checks["decompile_model"] == "metal_box" and checks["decompile_starts_beside_the_model"], checks
    assert checks["decompile_accept"] == ["FINISHED"] and checks["decompiled_to"] == "metal_box", checks
    assert {"metal_box.qc", "metal_box.smd", "anims"} <= set(checks["decompile_files"]), checks
    assert checks["source_browser_physics_option"] is True, checks  # the Collision option, on by default
    assert checks["physics_hidden"] and checks["physics_display"] == ["WIRE"], checks
    assert all(count > 0 for count in checks["panel_draws"].values()), checks["panel_draws"]  # each panel drew
    assert checks["rigged_import"] == ["FINISHED"] and checks["rigged_weights"] == [4, 68, 9033, 5540.0], checks
    assert checks["active_mesh_untouched"], checks
    assert checks["goldsrc_import"] == ["FINISHED"] and checks["goldsrc_engine"] == "GoldSrc", checks
    assert checks["goldsrc_meshes"] >= 3 and checks["goldsrc_images"] == [True], checks
    assert checks["steam"] == ["FINISHED"] and checks["games"] == [
        ["Half-Life 2", False, True],
        ["Team Fortress 2", True, True],
        ["knife.vpk", True, False],
    ], checks
    assert checks["preferences_draws"] > 0 and checks["sidebar_game_models_draws"] > 0, (
        checks
    )  # the games list drew in the Preferences window
    assert checks["mount"] == ["FINISHED"] and checks["browser_open"] == ["RUNNING_MODAL"], checks
    assert checks["browser_models"] == ["models/v_models/v_knife_t.mdl", "models/w_models/weapons/w_knife_t.mdl"]
    assert checks["browser_index"] == 0 and checks["browser_import"] == 1806, checks  # a click imported it
    assert checks["export_browser_operator"] == "EXPORT_SCENE_OT_ms3d", checks
    assert checks["export"] == checks["export_reimport"] == ["FINISHED"], checks
    assert checks["export_counts_equal"] and checks["export_bones"] == [44], checks  # dwarf.ms3d's 44 joints
    # File > Export > Source Model Sources on the unedited metal_box: the files of its Decompile…, byte for byte
    assert checks["source_export_browser_operator"] == "EXPORT_SCENE_OT_source_qc", checks
    assert checks["source_export"] == ["FINISHED"] and "metal_box.qc" in checks["source_export_files"], checks
    assert checks["source_export_differs"] == [], checks
    # ... then edited in Edit Mode (the top half of its mesh moved up 10 units) and exported into a second folder
    (low, high), (edited_low, edited_high) = checks["source_unedited_bounds"], checks["source_edit_bounds"]
    assert checks["source_edit_move"] == checks["source_edit_export"] == ["FINISHED"], checks
    assert 0 < checks["source_edit_selected"] < 5364, checks  # part of the mesh's vertices
    assert edited_low == low and abs(edited_high[2] - high[2] - 10) < 1e-3 and edited_high[:2] == high[:2], checks
    assert checks["source_reimport_file"] == "metal_box.smd", checks
    if bst is not None:  # ... whose reference SMD Blender Source Tools reads back in the same Blender: the edit
        assert checks["source_reimport"] == ["FINISHED"], checks
        assert checks["source_reimport_objects"] == ["ARMATURE", "MESH"], checks
        # its vertices are the mesh's distinct positions (it welds an SMD's corners), its triangles the mesh's
        assert checks["source_reimport_counts"] == checks["source_edit_counts"], checks
        assert checks["source_edit_counts"][1] == 5064, checks
        corners = zip(checks["source_reimport_bounds"], checks["source_edit_bounds"], strict=True)
        worst = max(abs(a - b) for theirs, ours in corners for a, b in zip(theirs, ours, strict=True))
        assert worst < 1e-3, checks  # one Blender-held float32 and the SMD's six decimals apart
        assert checks["source_reimport_materials"] == ["metal_box"], checks
    # Bloodlines: the whole character (its own vertices, VTX 107 strips), skinned to its 77 bones and posed in its
    # default sequence, standing (feet at 0, head near the 72-unit hull's top), the body's .tth/.ttz texture shown
    assert checks["bloodlines_import"] == ["FINISHED"] and checks["bloodlines_version"] == 2531, checks
    assert (checks["bloodlines_triangles"], checks["bloodlines_bones"]) == (6080, 77), checks
    assert checks["bloodlines_action"] and all(checks["bloodlines_action"]), checks
    low, high = checks["bloodlines_height"]  # in Source units
    assert abs(low) < 3 and 60 < high < 75, checks["bloodlines_height"]
    if textured:
        body = [size for name, *size in checks["bloodlines_images"] if name.startswith("femcitizen3body")]
        assert body == [[1024, 512]], checks["bloodlines_images"]

    expected_shots = GUI_SHOTS if bst is not None else tuple(s for s in GUI_SHOTS if s != "source_reimport")
    assert sorted(result["shots"]) == sorted(expected_shots), result["shots"]
    crops = tmp_path / "crops"
    crops.mkdir()
    docs = os.environ.get("IO_MS3D_MDL_SCREENSHOTS")
    for name, shot in result["shots"].items():
        path = Path(shot["path"])
        assert path.is_file() and path.stat().st_size > 10_000, f"{name}: no screenshot"
        assert image_spread(path, shot["crop"]) > 0.02, f"{name}: the screenshot is blank ({path})"
        small_png(path, shot["crop"], crops / f"{name}.png")
    if docs:
        target = Path(docs) if Path(docs).is_absolute() else ROOT / docs
        if blender_gui.parent != LANES[0]:  # the README shows the first Blender's; the others' go to a subfolder
            target /= blender_gui.parent.name
        target.mkdir(parents=True, exist_ok=True)
        for name in expected_shots:
            shutil.copy(crops / f"{name}.png", target / f"{name}.png")
