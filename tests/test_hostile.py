"""The hostile-file corpus: each class of attack from the issue, built by ``tests/hostile.py``, with its outcome
asserted — nothing outside the roots is opened (a canary folder is watched through Python's audit hook and must
never be touched), nothing hangs, every bomb ends with our message within 10 s and 1 GB (each whole import runs in
its own process, measured from outside), and nothing the import did not create is modified."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import hostile
import pytest
from conftest import TESTS, bpy

from io_ms3d_mdl.access import Confinement, confined, read_file
from io_ms3d_mdl.budget import Budget
from io_ms3d_mdl.errors import BudgetExceeded, FormatError
from io_ms3d_mdl.scene.load import load_ms3d, load_source
from io_ms3d_mdl.scene.ms3d.convert import Ms3dOptions
from io_ms3d_mdl.scene.source.convert import SourceOptions

SECONDS, MEMORY = 10.0, 1 << 30

_opened: list[str] = []


def _audit(event: str, args: tuple) -> None:
    """Records every file opened for reading (writes are the test building its files)."""
    if event != "open" or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    mode, flags = (*args, None, 0)[1:3]
    reading = ("r" in mode or "+" in mode) if isinstance(mode, str) else (flags or 0) & os.O_ACCMODE != os.O_WRONLY
    if reading:
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def watch(tmp_path):
    """The canary folder; after the test, proves no file in it was opened by this process."""
    outside = hostile.canaries(tmp_path)
    _opened.clear()
    yield outside
    touched = [p for p in _opened if str(outside) in os.path.abspath(p)]
    assert not touched, f"opened outside the roots: {touched}"


def no_secret(scene) -> None:
    text = repr([m.props for m in scene.materials]) + repr(list(scene.warnings)) + repr(scene.props)
    assert hostile.SECRET not in text
    for m in scene.materials:
        for ref in (m.base_texture, m.normal_texture, m.alpha_texture):
            assert ref is None or ref.resolved_path is None or "outside" not in ref.resolved_path


# --- confinement -------------------------------------------------------------------------------------------------


def test_vmt_patch_include_and_texture_never_leave_the_game_folder(tmp_path, watch):
    scene = load_source(str(hostile.source_vmt_traversal(tmp_path)))
    no_secret(scene)
    body = next(m for m in scene.materials if m.name == "body")
    assert body.props["source_shader"] == "patch"  # the include was refused, the material still made
    assert scene.materials[2].base_texture.resolved_path is None  # '../../outside/secret' not followed


def test_cdmaterials_with_dotdot_never_leave_the_game_folder(tmp_path, watch):
    scene = load_source(str(hostile.source_cdmaterials_traversal(tmp_path)))
    no_secret(scene)
    assert all(m.props.get("source_missing") for m in scene.materials)


def test_includemodel_never_leaves_the_game_folder(tmp_path, watch):
    scene = load_source(str(hostile.source_include_traversal(tmp_path)))
    no_secret(scene)
    lost = [w for w in scene.warnings if "were not found under the game folder" in w]
    assert len(lost) == 1 and lost[0].startswith("3 included models"), scene.warnings


@pytest.mark.parametrize("name", ["{secret}", "C:\\Users\\me\\secret.png", "\\\\host\\share\\secret.png", "//host/x"])
def test_absolute_ms3d_texture_paths_are_not_followed(tmp_path, watch, name):
    raw = name.format(secret=watch / "secret.png")
    scene = load_ms3d(str(hostile.ms3d_textured(tmp_path / "model", raw, alphamap=raw)))
    material = scene.materials[0]
    assert material.base_texture.resolved_path is None and material.alpha_texture.resolved_path is None
    assert any("absolute paths are followed only when allowed" in w for w in scene.warnings)


def test_absolute_texture_paths_only_with_the_users_consent(tmp_path):
    outside = hostile.canaries(tmp_path)
    path = hostile.ms3d_textured(tmp_path / "model", str(outside / "secret.png"))
    scene = load_ms3d(str(path), Ms3dOptions(allow_absolute_paths=True))
    assert scene.materials[0].base_texture.resolved_path == str(outside / "secret.png")


def test_base_name_search_still_finds_moved_textures_under_the_roots(tmp_path):
    """MilkShape's tolerant search keeps working: the base name is looked up in the model's folders and roots."""
    (tmp_path / "model" / "Textures").mkdir(parents=True)
    (tmp_path / "model" / "Textures" / "Skin.PNG").write_bytes(hostile.png_1x1())
    path = hostile.ms3d_textured(tmp_path / "model", "C:\\old\\work\\skin.png")
    scene = load_ms3d(str(path))
    assert scene.materials[0].base_texture.resolved_path == str(tmp_path / "model" / "Textures" / "Skin.PNG")
    roots = tmp_path / "library"
    roots.mkdir()
    (roots / "wood.png").write_bytes(hostile.png_1x1())
    path = hostile.ms3d_textured(tmp_path / "model", "..\\..\\somewhere\\wood.png")
    assert load_ms3d(str(path)).materials[0].base_texture.resolved_path is None
    scene = load_ms3d(str(path), Ms3dOptions(search_roots=(str(roots),)))
    assert scene.materials[0].base_texture.resolved_path == str(roots / "wood.png")


def test_symlink_out_of_the_roots_is_refused_inside_is_allowed(tmp_path):
    outside = hostile.canaries(tmp_path)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "out.png").symlink_to(outside / "secret.png")
    (folder / "real.png").write_bytes(hostile.png_1x1())
    (folder / "in.png").symlink_to(folder / "real.png")
    confinement = Confinement.for_model(str(folder / "m.ms3d"))
    assert confinement.find(str(folder), "out.png") is None
    assert confinement.find(str(folder), "IN.png") == str(folder / "in.png")
    assert confinement.find(str(folder), "../outside/secret.png") is None


def test_linked_folders_and_link_chains_are_judged_by_where_they_lead(tmp_path):
    """A linked folder leading out is refused, one leading inside is allowed, and a chain of links is followed to
    its end (the containment check resolves every path afresh: a cached folder would let a folder swapped for a
    link during the import pass)."""
    outside = hostile.canaries(tmp_path)
    folder = tmp_path / "model"
    (folder / "real").mkdir(parents=True)
    (folder / "real" / "skin.png").write_bytes(hostile.png_1x1())
    (folder / "away").symlink_to(outside, target_is_directory=True)
    (folder / "here").symlink_to(folder / "real", target_is_directory=True)
    (folder / "real" / "hop.png").symlink_to(folder / "real" / "skin.png")
    (folder / "real" / "chain.png").symlink_to(folder / "here" / "hop.png")
    (folder / "real" / "escape.png").symlink_to(folder / "away" / "secret.png")
    confinement = Confinement.for_model(str(folder / "m.mdl"))
    assert confinement.find(str(folder), "away/secret.png") is None
    assert confinement.find(str(folder), "here/skin.png") == str(folder / "here" / "skin.png")
    assert confinement.find(str(folder), "real/chain.png") == str(folder / "real" / "chain.png")
    assert confinement.find(str(folder), "real/escape.png") is None
    # ``..`` after a link climbs from where the link leads: away/.. is the canaries' parent, not the model folder.
    assert not confinement.allows(str(folder / "away" / ".." / "outside" / "secret.png"))
    assert confinement.allows(str(folder / "here" / ".." / "real" / "skin.png"))


def test_a_folder_swapped_for_a_link_during_the_import_is_judged_afresh(tmp_path):
    """Lookups are cached per import, but where a found path leads is not: a folder replaced by a link to outside
    the roots after a first lookup in it does not let a second lookup through."""
    outside = hostile.canaries(tmp_path)
    models = tmp_path / "game" / "models"
    (models / "sub").mkdir(parents=True)
    (models / "sub" / "a.png").write_bytes(hostile.png_1x1())
    confinement = Confinement.for_model(str(models / "m.mdl"))
    assert confinement.find(str(models), "sub/a.png") == str(models / "sub" / "a.png")
    (models / "sub" / "a.png").unlink()
    (models / "sub").rmdir()
    (models / "sub").symlink_to(outside, target_is_directory=True)
    assert confinement.find(str(models), "sub/secret.png") is None


def test_lookup_prefers_the_exact_name_and_works_through_unlistable_folders(tmp_path):
    """Case-insensitive lookups come from a cached folder listing; an exact name still wins over a case variant
    beside it, and a folder that may be entered but not listed is walked by exact names."""
    folder = tmp_path / "model"
    (folder / "Sub").mkdir(parents=True)
    (folder / "Sub" / "skin.png").write_bytes(b"lower")
    (folder / "Sub" / "SKIN.png").write_bytes(b"upper")
    (folder / "Sub" / "other.png").write_bytes(b"x")
    confinement = Confinement.for_model(str(folder / "m.ms3d"))
    assert confinement.find(str(folder), "Sub/SKIN.png") == str(folder / "Sub" / "SKIN.png")
    assert confinement.find(str(folder), "Sub/skin.png") == str(folder / "Sub" / "skin.png")
    assert confinement.find(str(folder), "sub\\OTHER.PNG") == str(folder / "Sub" / "other.png")
    assert confinement.find(str(folder), "sub/missing.png") is None
    if os.geteuid() != 0:  # root lists any folder
        (folder / "Sub").chmod(0o311)
        try:
            assert confinement.find(str(folder), "Sub/other.png") == str(folder / "Sub" / "other.png")
        finally:
            (folder / "Sub").chmod(0o755)


def test_lookups_share_their_folders_yet_each_name_is_judged_alone(tmp_path):
    """Names in one folder reuse that folder's lookup (a material search asks for dozens of names in the same
    few folders); each name is still found, missed or refused on its own, and a name ending in ``..`` (a
    folder) or climbing out through a remembered folder is refused."""
    outside = hostile.canaries(tmp_path)
    folder = tmp_path / "game" / "models"
    (folder / "Skins").mkdir(parents=True)
    (folder / "Skins" / "a.png").write_bytes(b"a")
    (folder / "Skins" / "B.png").write_bytes(b"b")
    (folder / "Skins" / "Sub").mkdir()
    confinement = Confinement.for_model(str(folder / "m.mdl"))
    assert confinement.find(str(folder), "skins/A.PNG") == str(folder / "Skins" / "a.png")
    assert confinement.find(str(folder), "skins/c.png") is None
    assert confinement.find(str(folder), "SKINS\\b.png") == str(folder / "Skins" / "B.png")
    assert confinement.find(str(folder), "skins/sub/..") is None
    assert confinement.find(str(folder), "skins/sub") is None  # a folder is not a regular file
    assert confinement.find(str(folder), "nothere/a.png") is None
    assert (outside / "secret.png").is_file()
    assert confinement.find(str(folder), "../../outside/secret.png") is None
    assert confinement.find(str(folder), "skins/../../../outside/secret.png") is None


@pytest.mark.parametrize("kernel", [True, False], ids=["kernel", "realpath"])
def test_where_a_found_file_leads_is_judged_the_same_by_kernel_and_realpath(tmp_path, monkeypatch, kernel):
    """On Linux the kernel names the file a lookup opened (one path-only descriptor: its type and its place are the
    same object's); elsewhere ``realpath`` and ``stat`` do. Both give the same answers on links in and out, chains,
    dangling and looping links, a FIFO, a folder and a file nobody may read."""
    from io_ms3d_mdl import access

    if sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd"):
        assert access._kernel_paths()  # used where it can be
    elif kernel:
        pytest.skip("this system has no /proc/self/fd naming open files (not Linux, or /proc not mounted)")
    monkeypatch.setattr(access, "_kernel_paths", lambda: kernel)
    path_only = []  # whether each open was a path-only one
    real_open, o_path = os.open, getattr(os, "O_PATH", 0)
    monkeypatch.setattr(
        access.os, "open", lambda p, flags, *a: path_only.append(bool(flags & o_path)) or real_open(p, flags, *a)
    )
    outside = hostile.canaries(tmp_path)
    folder = tmp_path / "model"
    (folder / "real").mkdir(parents=True)
    (folder / "real" / "skin.png").write_bytes(hostile.png_1x1())
    (folder / "real" / "locked.png").write_bytes(b"x")
    (folder / "real" / "locked.png").chmod(0)
    (folder / "away").symlink_to(outside, target_is_directory=True)
    (folder / "in.png").symlink_to(folder / "real" / "skin.png")
    (folder / "out.png").symlink_to(outside / "secret.png")
    (folder / "chain.png").symlink_to(folder / "in.png")
    (folder / "dangling.png").symlink_to(folder / "nothing.png")
    (folder / "loop.png").symlink_to(folder / "loop.png")
    (folder / "dir.png").mkdir()
    os.mkfifo(folder / "pipe.png")
    confinement = Confinement.for_model(str(folder / "m.ms3d"))
    path_only.clear()  # (making the roots asks where each leads: what is counted is the lookups)
    found = {
        name: confinement.find(str(folder), name)
        for name in (
            "real/skin.png", "in.png", "chain.png", "real/locked.png",
            "out.png", "away/secret.png", "dangling.png", "loop.png", "dir.png", "pipe.png",
        )
    }  # fmt: skip
    assert found == {
        "real/skin.png": str(folder / "real" / "skin.png"),
        "in.png": str(folder / "in.png"),
        "chain.png": str(folder / "chain.png"),
        "real/locked.png": str(folder / "real" / "locked.png"),  # found; reading it is another matter
        "out.png": None,
        "away/secret.png": None,
        "dangling.png": None,
        "loop.png": None,
        "dir.png": None,
        "pipe.png": None,
    }
    assert path_only.count(True) == (10 if kernel else 0)  # the way asked for is the way taken, once a lookup


def test_a_found_file_deeper_than_the_kernel_names_is_still_judged(tmp_path):
    """The kernel names no path longer than PATH_MAX in ``/proc/self/fd``: a short link to a file that deep (inside
    the roots) is then judged by ``realpath``, as before, not refused; one that deep outside is still refused."""
    if os.mkdir not in os.supports_dir_fd:
        pytest.skip("this system cannot make folders relative to a descriptor")
    segment = "d" * 250
    depth = 4400 // (len(segment) + 1)  # over 4,096 bytes whatever the temporary folder
    for top in (tmp_path / "model", tmp_path / "outside"):
        top.mkdir()
        folder = os.open(top, os.O_RDONLY)
        for _ in range(depth):  # deeper than a path may be spelled: walked by descriptor
            os.mkdir(segment, dir_fd=folder)
            inner = os.open(segment, os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = inner
        os.close(os.open("f.png", os.O_CREAT | os.O_WRONLY, dir_fd=folder))
        os.close(folder)
        half = "/".join([segment] * (depth // 2))  # a link's target is at most 4,095 bytes: two links
        os.symlink(top / half, tmp_path / "model" / f"{top.name}_half")
        rest = "/".join([segment] * (depth - depth // 2))
        os.symlink(f"{top.name}_half/{rest}/f.png", tmp_path / "model" / f"{top.name}.png")
    confinement = Confinement.for_model(str(tmp_path / "model" / "m.mdl"))
    assert confinement.find(str(tmp_path / "model"), "model.png") == str(tmp_path / "model" / "model.png")
    assert confinement.find(str(tmp_path / "model"), "outside.png") is None


def test_a_last_step_naming_another_drive_is_refused(tmp_path, monkeypatch):
    """On Windows ``tex/D:x.vmt`` would join the folder's path with ``D:x.vmt`` into a path on drive D: (seen
    here through Windows' own path rules); such a step is refused before any lookup."""
    import ntpath

    from io_ms3d_mdl import access

    folder = tmp_path / "model"
    (folder / "tex").mkdir(parents=True)
    (folder / "tex" / "D:x.vmt").write_bytes(b"x")  # a plain name on this system
    confinement = Confinement.for_model(str(folder / "m.mdl"))
    assert confinement.find(str(folder), "tex/D:x.vmt") == str(folder / "tex" / "D:x.vmt")
    monkeypatch.setattr(access.os.path, "splitdrive", ntpath.splitdrive)
    assert Confinement.for_model(str(folder / "m.mdl")).find(str(folder), "tex/D:x.vmt") is None


@pytest.mark.parametrize("kind", ["fifo", "zero", "outside"])
def test_special_sidecars_are_treated_as_absent_without_hanging(tmp_path, kind):
    path = hostile.source_special_sidecar(tmp_path, kind)
    start = time.perf_counter()
    scene = load_source(str(path))
    assert time.perf_counter() - start < 5
    assert any("the .vvd file is missing" in w for w in scene.warnings)
    assert not scene.objects


def test_a_fifo_or_device_is_refused_when_opened_directly(tmp_path):
    fifo = tmp_path / "model.mdl"
    os.mkfifo(fifo)
    start = time.perf_counter()
    with pytest.raises(FormatError, match="not a regular file \\(a FIFO\\)"):
        load_source(str(fifo))
    with pytest.raises(FormatError, match="not a regular file \\(a character device\\)"):
        read_file("/dev/zero")
    with pytest.raises(FormatError, match="not a regular file \\(a folder\\)"):
        read_file(str(tmp_path))
    assert time.perf_counter() - start < 2


def test_files_are_read_with_a_size_bound(tmp_path):
    path = hostile.source(tmp_path)
    with pytest.raises(BudgetExceeded, match=r"file size of .* exceeds the work budget .* Work Limit"):
        load_source(str(path), SourceOptions(work_limit=1e-6))
    with confined(Confinement.for_model(str(path)), Budget(1e-6)), pytest.raises(BudgetExceeded):
        read_file(path)


# --- budgets (reader and scene level; the whole import in a process is below) ------------------------------------


@pytest.mark.parametrize(
    "build, expected",
    [
        (hostile.source_frame_bomb, "frames × bones of animation 'bomb' of 12,800,000 exceeds the work budget"),
        (hostile.source_event_bomb, "records sharing tables"),
        (hostile.source_shared_strip_groups, "records sharing tables"),
        (hostile.source_fixup_bomb, "LOD fixups replay"),
    ],
)
def test_source_bombs_are_refused_with_the_budget_named(tmp_path, build, expected):
    path = build(tmp_path)
    start = time.perf_counter()
    with pytest.raises(FormatError, match=expected) as info:
        load_source(str(path))
    assert time.perf_counter() - start < SECONDS
    if isinstance(info.value, BudgetExceeded):
        assert "Work Limit" in info.value.message


def test_a_raised_work_limit_lets_a_large_genuine_animation_through(tmp_path):
    path = hostile.source_frame_bomb(tmp_path, bones=8, frames=600_000 // 8)
    scene = load_source(str(path), SourceOptions(work_limit=1.0))
    assert scene.actions and len(scene.actions[0].channels) == 8


def test_huge_texture_decodes_nothing_and_says_so(tmp_path):
    scene = load_source(str(hostile.source_huge_texture(tmp_path)))
    body = next(m for m in scene.materials if m.name == "body")
    assert body.base_texture.pixels is None
    assert any("8192×8192" in w and "work budget" in w for w in scene.warnings)


def test_huge_texture_uses_the_largest_mip_that_fits(tmp_path):
    hostile.vmt(tmp_path, "body", '"VertexLitGeneric"\n{\n"$basetexture" "models/test/big"\n}\n')
    big = hostile.game(tmp_path) / "materials" / "models" / "test" / "big.vtf"
    big.write_bytes(hostile.vtf(8192, 8192, fmt=13, fill=b"\xff\xff\x00\x00\x00\x00\x00\x00", mips=14))
    scene = load_source(str(hostile.source(tmp_path)))
    pixels = next(m for m in scene.materials if m.name == "body").base_texture.pixels
    assert pixels.shape == (4096, 4096, 4)


def test_ms3d_resampling_is_bounded(tmp_path):
    start = time.perf_counter()
    scene = load_ms3d(str(hostile.ms3d_frame_bomb(tmp_path)))
    assert time.perf_counter() - start < SECONDS
    assert any("not resampled" in w and "work budget" in w for w in scene.warnings)
    assert sum(len(c.rotation_frames) for c in scene.actions[0].channels) == 2 * 64


def test_many_warnings_are_linear(tmp_path):
    from io_ms3d_mdl.errors import Warnings

    start = time.perf_counter()
    warnings = Warnings()
    for i in range(200_000):
        warnings.add(f"w{i % 100_000}")
    assert len(warnings) == 100_000 and time.perf_counter() - start < 2


def test_extreme_floats_never_reach_the_scene(tmp_path):
    import math

    scene = load_source(str(hostile.source_extreme_floats(tmp_path)))
    for m in scene.materials:
        values = [m.alpha, m.roughness, m.specular_level, m.emission_strength, *m.base_color, *m.emission_color]
        assert all(math.isfinite(v) for v in values), m
        assert m.alpha_clip is None or math.isfinite(m.alpha_clip)
    assert scene.fps is None or math.isfinite(scene.fps)


# --- archives and games ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["pak01_dir.vpk", "addon.gma"])
def test_a_model_inside_an_archive_never_reads_outside_it(tmp_path, watch, kind):
    from io_ms3d_mdl import access

    access.clear_cache()
    scene = load_source(hostile.archived_traversal(tmp_path, kind))
    no_secret(scene)
    assert scene.triangle_count > 0
    assert any("included model '../../outside/secret.mdl' was not found" in w for w in scene.warnings)


def test_a_strangers_gameinfo_never_widens_the_roots(tmp_path, watch):
    scene = load_source(str(hostile.gameinfo_widening(tmp_path)))
    no_secret(scene)
    assert all(m.props.get("source_missing") for m in scene.materials)


@pytest.mark.parametrize("name, data, expected", hostile.archive_bombs(), ids=[b[0] for b in hostile.archive_bombs()])
def test_crafted_archives_are_refused_with_our_message(tmp_path, name, data, expected):
    from io_ms3d_mdl.filesystem import mounts

    path = tmp_path / name
    path.write_bytes(data)
    mounts.forget_archives()
    start = time.perf_counter()
    with pytest.raises(FormatError, match=expected) as info:
        load_source(str(path / "models" / "x.mdl"))
    assert time.perf_counter() - start < SECONDS
    assert info.value.message.startswith(name)


# --- the whole import, in its own process: outcome, time and memory ----------------------------------------------


def run_import(path: Path, **options) -> tuple[dict, list[str], float, int]:
    """(result, report lines, wall seconds, peak resident bytes) of one import through the operator."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(TESTS / "probe_import.py"), str(path), json.dumps(options)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    lines = out.splitlines()
    results = [json.loads(line[7:]) for line in lines if line.startswith("RESULT ")]
    assert proc.returncode == 0 and results, out[-3000:]
    # The probe's own high-water mark: ru_maxrss would carry this test runner's peak into the child (Linux).
    return results[0], lines, seconds, results[0].get("peak_bytes") or usage.ru_maxrss * 1024


BOMBS = {
    "ms3d keys 99,999 frames apart": (hostile.ms3d_frame_bomb, "FINISHED", "not resampled"),
    "ms3d 20,000 clips": (hostile.ms3d_clip_bomb, "FINISHED", None),
    "mdl 100k-frame animation": (hostile.source_frame_bomb, "CANCELLED", "work budget"),
    "mdl 2,000 sequences sharing 4,096 events": (hostile.source_event_bomb, "CANCELLED", "work budget"),
    "vtx strip groups sharing one table": (hostile.source_shared_strip_groups, "CANCELLED", "work budget"),
    "vvd fixups replaying every vertex": (hostile.source_fixup_bomb, "CANCELLED", "LOD fixups replay"),
    "8192² DXT1 texture": (hostile.source_huge_texture, "FINISHED", "work budget"),
    "fifo sidecar": (lambda tmp: hostile.source_special_sidecar(tmp, "fifo"), "FINISHED", ".vvd file is missing"),
    "goldsrc 10-million-frame sequence": (hostile.goldsrc_frame_bomb, "CANCELLED", "work budget"),
    "goldsrc 100,000 empty animation spans": (hostile.goldsrc_empty_spans, "FINISHED", "more spans than"),
}


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")
@pytest.mark.parametrize("case", sorted(BOMBS))
def test_every_bomb_ends_within_10_s_and_1_gb(tmp_path, case):
    build, status, message = BOMBS[case]
    result, lines, seconds, memory = run_import(build(tmp_path))
    assert result["status"] == [status], (result, lines[-20:])
    if message:
        assert message in (result["error"] or "") + "\n".join(lines), lines[-20:]
    assert seconds < SECONDS, f"{case}: {seconds:.1f} s"
    assert memory < MEMORY, f"{case}: {memory / 2**20:.0f} MiB"


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")
def test_traversal_never_reaches_blender_images(tmp_path):
    """End to end: the canary image is neither loaded, packed nor named by any image of the result."""
    outside = hostile.canaries(tmp_path)
    model = hostile.ms3d_textured(tmp_path / "model", str(outside / "secret.png"), alphamap="..\\..\\outside\\x.png")
    result, _, _, _ = run_import(model)
    assert result["status"] == ["FINISHED"]
    assert not any("outside" in i["filepath"] or "secret" in i["filepath"] for i in result["images"])
    source = hostile.source_vmt_traversal(tmp_path / "src")
    result, _, _, _ = run_import(source)
    assert result["status"] == ["FINISHED"]
    assert hostile.SECRET not in repr(result)


# --- nothing the import did not create is modified ---------------------------------------------------------------

PIPE = "source/Igrium__portal_nrtx/models/props_pipes/pipe02_45degree01.mdl"


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")
def test_png_textures_never_overwrite_and_are_reused_when_identical(addon, tmp_path):
    from conftest import samples_dir

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    textures = tmp_path / "textures"
    textures.mkdir()
    theirs = textures / "Pipesystem01a_skin1.png"
    theirs.write_bytes(b"the user's own file")
    model = str(samples_dir() / PIPE)
    assert bpy.ops.import_scene.source_mdl(filepath=model, texture_output="PNG") == {"FINISHED"}
    assert theirs.read_bytes() == b"the user's own file"
    written = sorted(p.name for p in textures.iterdir())
    assert "Pipesystem01a_skin1_1.png" in written and len(written) == 4
    assert bpy.ops.import_scene.source_mdl(filepath=model, texture_output="PNG") == {"FINISHED"}
    assert sorted(p.name for p in textures.iterdir()) == written  # identical bytes: reused, nothing new
    assert not [p for p in textures.iterdir() if p.name.startswith(".")]  # no temporary files left


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")
def test_a_failed_import_deletes_the_textures_it_wrote(addon, tmp_path, monkeypatch):
    from conftest import datablock_counts, samples_dir

    from io_ms3d_mdl.blender import scene_builder

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    (tmp_path / "textures").mkdir()
    (tmp_path / "textures" / "keep.png").write_bytes(b"mine")
    before = datablock_counts()

    def boom(*args, **kwargs):
        raise RuntimeError("injected failure after the textures were written")

    monkeypatch.setattr(scene_builder, "build_mesh", boom)
    with pytest.raises(RuntimeError, match="injected failure"):
        bpy.ops.import_scene.source_mdl(filepath=str(samples_dir() / PIPE), texture_output="PNG")
    assert sorted(p.name for p in (tmp_path / "textures").iterdir()) == ["keep.png"]
    assert datablock_counts() == before


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")
def test_the_users_images_are_never_modified(addon, tmp_path):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "mask.png").write_bytes(hostile.png_1x1())
    users = bpy.data.images.load(str(folder / "mask.png"))
    users.colorspace_settings.name = "sRGB"
    path = hostile.ms3d_textured(folder, "mask.png", alphamap="mask.png")
    assert bpy.ops.import_scene.ms3d(filepath=str(path)) == {"FINISHED"}
    assert users.colorspace_settings.name == "sRGB" and not users.keys()
    ours = [i for i in bpy.data.images if i != users]
    assert len(ours) == 1 and ours[0].colorspace_settings.name == "Non-Color"  # a new datablock of our own


# --- regressions found by ``scripts/fuzz.py --blender`` ----------------------------------------------------------


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")
def test_degenerate_source_triangles_are_dropped_not_crashed_on(tmp_path):
    """Triangles repeating a vertex made Blender's custom-normal code crash (SIGSEGV) on a mutated prop."""
    from source_writer import SBodyPart, SMesh, SModel, SVertex

    verts = [SVertex((x, y, 0.0)) for x, y in ((0, 0), (1, 0), (1, 1), (0, 1))]
    mesh = SMesh(0, verts, [(0, 1, 2), (0, 0, 1), (2, 3, 3), (0, 2, 3), (0, 2, 3)])
    spec = hostile.character_spec(includes=[], body_parts=[SBodyPart("body", [SModel("body", [mesh])])])
    result, lines, _, _ = run_import(hostile.source(tmp_path, spec))
    assert result["status"] == ["FINISHED"], lines[-10:]
    assert any("(2 degenerate skipped)" in line for line in lines)  # counted in the report, not warned about
    assert not any("degenerate triangles" in line for line in lines)


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")
def test_more_material_slots_than_blender_holds_do_not_crash_it(tmp_path):
    """One object with 32,768 materials (one per mesh) made Blender fail to allocate its slot array and then
    crash reading it (red-team finding); the faces of the last ones now share one empty slot."""
    from source_writer import SBodyPart, SMesh, SModel, SVertex

    verts = [SVertex((x, y, 0.0)) for x, y in ((0, 0), (1, 0), (1, 1))]
    meshes = [SMesh(i, verts, [(0, 1, 2)]) for i in range(32_768)]
    spec = hostile.character_spec(includes=[], body_parts=[SBodyPart("body", [SModel("body", meshes)])])
    result, lines, _, _ = run_import(hostile.source(tmp_path, spec))
    assert result["status"] == ["FINISHED"], lines[-10:]
    assert any("32,768 material slots, more than the 32,767 Blender gives" in line for line in lines)


def test_material_slots_are_capped_at_blenders_limit():
    import numpy as np

    from io_ms3d_mdl.scene.slots import MAX_MATERIAL_SLOTS, cap_material_slots
    from io_ms3d_mdl.scene.types import MeshData, ObjectData, SceneData

    count = MAX_MATERIAL_SLOTS + 3
    triangles = np.zeros((count, 3), np.int32)
    mesh = MeshData("m", np.zeros((3, 3), np.float32), triangles, material_indices=np.arange(count, dtype=np.int32))
    mesh.materials, mesh.material_refs = list(range(count)), list(range(count))
    small = MeshData("s", np.zeros((3, 3), np.float32), triangles[:2], materials=[0, None])
    scene = SceneData("x", objects=[ObjectData("m", mesh), ObjectData("s", small)])
    cap_material_slots(scene)
    assert len(mesh.materials) == MAX_MATERIAL_SLOTS and mesh.materials[-1] is None and mesh.materials[-2] == count - 5
    assert mesh.material_refs[-1] == -1 and len(mesh.material_refs) == MAX_MATERIAL_SLOTS
    assert mesh.material_indices.dtype == np.int32 and int(mesh.material_indices.max()) == MAX_MATERIAL_SLOTS - 1
    assert mesh.material_indices[: MAX_MATERIAL_SLOTS - 1].tolist() == list(range(MAX_MATERIAL_SLOTS - 1))
    assert small.materials == [0, None]
    assert list(scene.warnings) == [
        "'m' uses 32,770 material slots, more than the 32,767 Blender gives an object; the faces of the last 4 "
        "share one empty slot"
    ]


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")
def test_an_absurd_bone_length_does_not_break_the_rig(tmp_path):
    """A bone 10²⁴ units long overflowed Blender's float32 maths (a singular bone matrix, then an internal error
    when an attachment was parented to it)."""
    from source_writer import SBone

    spec = hostile.character_spec(includes=[])
    spec.bones = [SBone("pelvis", -1, (0, 0, 1)), SBone("spine", 0, (0, 0, 1e24))]
    result, lines, _, _ = run_import(hostile.source(tmp_path, spec), units="HAMMER", bone_orientation="CHILD")
    assert result["status"] == ["FINISHED"], lines[-10:]
    assert not any("internal error" in line or "Traceback" in line for line in lines)


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")
def test_a_degenerate_attachment_matrix_never_becomes_nan(addon, tmp_path):
    """An attachment "rotation" of zeros and 6·10²⁶ is finite, yet Blender decomposes it into NaN."""
    import math

    from source_writer import SAttachment

    spec = hostile.character_spec(includes=[])
    spec.attachments = [SAttachment("odd", 0, ((0, 0, 0, 0), (-6.2e26, 1e-44, 0, 0), (0, 0, 0, 1)))]
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.import_scene.source_mdl(filepath=str(hostile.source(tmp_path, spec))) == {"FINISHED"}
    odd = bpy.data.objects["odd"]
    assert all(math.isfinite(v) for row in odd.matrix_world for v in row)


def test_huge_hitbox_sizes_are_bounded_before_blender():
    """A hitbox whose box spans ±10³⁸ is finite, yet its scale overflows Blender's float32 matrix (fuzz finding)."""
    import numpy as np

    from io_ms3d_mdl.scene.finite import MAX_COORDINATE, replace_non_finite
    from io_ms3d_mdl.scene.types import EmptyData, SceneData

    scene = SceneData("m", empties=[EmptyData("box", np.eye(4), scale=(3e38, 1.0, -3e38), size=1e30)])
    replace_non_finite(scene)
    assert scene.empties[0].scale == (MAX_COORDINATE, 1.0, -MAX_COORDINATE) and scene.empties[0].size == MAX_COORDINATE
    assert scene.warnings


def test_flex_rules_shared_by_many_flexed_models_are_bounded(tmp_path):
    """Every object with shape keys works through every flex rule again, and rules may share one table of
    operations: a small file with many flexed models asked for minutes of symbolic work (red-team finding). A shared
    program is worked through once, unless it reads other rules' weights (FETCH2), as this one does."""
    from source_writer import SBodyPart, SModel, SourceSpec, quad_mesh, write_mdl, write_source
    from test_blender_hostile_names import SFlex, SFlexes, with_flexes

    models, rules, ops = 6, 20, [(3, 0)] + [(0, 0)] * 999  # 20,000 operations per object, 140,000 over 7 runs
    spec = SourceSpec(body_parts=[SBodyPart("b", [SModel(f"m{m}", [quad_mesh()]) for m in range(models)])])
    flexes = SFlexes(
        ["f0"], [("c", 0.0, 1.0)], [(0, ops)], [SFlex(0, [(0, (0, 0, 1))], (0, m, 0)) for m in range(models)]
    )
    path = write_source(spec, tmp_path, "flexed")
    path.write_bytes(hostile.shared_flex_rules(with_flexes(write_mdl(spec), flexes), rules))
    options = SourceOptions(import_animations=False, import_physics=False, find_materials=False, work_limit=0.05)
    with pytest.raises(BudgetExceeded, match="flex rule work"):
        load_source(str(path), options)
    assert len(load_source(str(path), SourceOptions(import_physics=False)).objects) == models


def test_a_physics_block_of_one_repeated_key_is_linear():
    """A key repeated inside a keyvalues block keeps its values as a list; the list was copied on every repeat, so
    the 1 MB text section of one repeated key took about half a minute (red-team finding)."""
    from io_ms3d_mdl.formats.source.phy import parse_blocks

    started = time.perf_counter()
    (block,) = parse_blocks("collisionrules {" + " collisionpair v" * 60_000 + " }")
    assert len(block[1]["collisionpair"]) == 60_000
    assert time.perf_counter() - started < 1.0


def test_many_sections_sharing_one_block_are_charged_to_the_budget(tmp_path):
    """100,000 one-frame sections all pointing at one small block (an 800 KB file): each section costs a fixed
    setup, so sections are charged to the frames × bones budget and the import stops at once, not after minutes."""
    import numpy as np
    from source_writer import SAnimation, SBodyPart, SBone, SFrameBone, SModel, SourceSpec, quad_mesh, write_source

    from io_ms3d_mdl.formats.source import structs as S

    frames = 100_000
    anim = SAnimation("a", 3, [], section_frames=1)
    anim.frame_bones = {1: SFrameBone(rot=("const", (1.0, 0, 0, 0)), pos=("const2", (1.0, 2.0, 3.0)))}
    spec = SourceSpec(
        body_parts=[SBodyPart("body", [SModel("m", [quad_mesh()])])],
        bones=[SBone("r"), SBone("b", 0)],
        version=49,
        animations=[anim],
    )
    path = write_source(spec, tmp_path, "sections")
    data = bytearray(path.read_bytes())
    layout = S.LAYOUTS[49]
    header = np.frombuffer(bytes(data), layout.header, 1)[0]
    at = int(header["localanimindex"])
    desc = np.frombuffer(bytes(data[at : at + layout.animdesc.itemsize]), layout.animdesc).copy()
    first = at + int(desc["sectionindex"][0])
    table = len(data)
    data += bytes(data[first : first + 8]) * (frames + 3)  # every section entry names the first section's block
    desc[0]["numframes"], desc[0]["sectionindex"] = frames, table - at
    data[at : at + layout.animdesc.itemsize] = desc.tobytes()
    path.write_bytes(bytes(data))
    started = time.perf_counter()
    with pytest.raises(BudgetExceeded, match="frames × bones"):
        load_source(str(path), SourceOptions(animations="ALL"))
    assert time.perf_counter() - started < 2.0


def test_thousands_of_physics_solids_cost_linear_time():
    """12,000 one-box solids (a 5 MB .phy): the budget totals are kept as running sums, not summed over every
    object again for each solid (that was quadratic: about 23 s here)."""
    import numpy as np
    from phy_writer import PhySpec, PSolid, box, write_phy

    from io_ms3d_mdl.formats.source.phy import read_phy_bytes
    from io_ms3d_mdl.scene.source.physics import add_physics
    from io_ms3d_mdl.scene.types import SceneData

    count = 12_000
    phy = read_phy_bytes(write_phy(PhySpec([PSolid([box((0, 0, 0), (1, 1, 1))]) for _ in range(count)])), "x.phy")
    scene = SceneData("many")
    started = time.perf_counter()
    add_physics(scene, phy, np.eye(4)[None], ["root"], ["root"], 1.0, phy.checksum)
    assert len(scene.objects) == count
    assert time.perf_counter() - started < 8.0
