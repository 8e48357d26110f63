"""Benchmarks, always side by side with a peer in the same process and run; reports ratios (medians).

    python scripts/bench.py [--runs 9] [--output FILE.md] [--import-only | --animation-only | --export-only]

(a) MilkShape parse: our reader (and reader + scene conversion) against Assimp's MS3D loader (``assimp-py``)
    on every shared sample and a large synthetic grid.
(b) Source parse: our MDL + VVD + VTX readers against ``valvemdl`` reading the same three files.
(c) Import: our File > Import against Blender's C++ OBJ importer (``wm.obj_import``) loading an OBJ + MTL of the
    same objects (positions, per-corner UVs and normals, materials and texture files), for MilkShape samples,
    synthetic grids, small Source props and the rigged Source ``civilian.mdl`` (``--import-only`` runs just this);
    and our builder alone, from the scene already read and converted (the floor of our import), against it too.
(d) Keyframes: dwarf.ms3d's action written our way (``keyframe_points.add`` + ``foreach_set``) against the same
    keys written with one ``keyframe_insert`` per key, on the same armature.
(e) Animations: Source models imported with every animation, ours against the code before vectorising (copies
    of it kept here and in ``tests/test_keys_*.py``): decode + convert, curves, and the whole import
    (``--animation-only`` runs just this).
(f) VTF textures per format: our numpy decoder, srctools' compiled one, and the import's path through Blender's own
    DDS decoder (packed as DDS; and with its first decode forced), against the old numpy-and-PNG import.

(g) Export: File > Export > MilkShape 3D and > Source Model Sources against Blender's C++ OBJ exporter
    (``wm.obj_export``) on the same objects, and MilkShape and Source keys per second (``bench_export.py``;
    ``--export-only`` runs just this).

Runs A and B alternate so drift hits both; ratios are ours / peer (below 1.0 means we are faster).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import io
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from bench_report import report_tables

if TYPE_CHECKING:
    import bpy
    import numpy as np

    from io_ms3d_mdl.blender.animation import Limits

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = Path(os.environ.get("IO_MS3D_MDL_SHARED", ROOT.parent / "shared")) / "samples"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from io_ms3d_mdl.scene.types import ActionData, SceneData, SkeletonData  # noqa: E402 - after the path set-up

CLOCK = time.perf_counter  # --cpu: time.process_time, this process's CPU time (a busy machine's waits left out)


def median_pair(
    a: Callable[[], object], b: Callable[[], object], runs: int, setup: Callable[[], object] = lambda: None
) -> tuple[float, float]:
    """Median seconds of ``a`` and ``b``, alternating; ``setup`` runs untimed before every timed call."""
    ta, tb = [], []
    for fn in (a, b):  # warm-up: file cache, first-call imports
        setup()
        fn()
    for _ in range(runs):
        for fn, times in ((a, ta), (b, tb)):
            setup()
            gc.collect()
            start = CLOCK()
            fn()
            times.append(CLOCK() - start)
    return statistics.median(ta), statistics.median(tb)


def median_difference(a: Callable[[], object], b: Callable[[], object], runs: int) -> float:
    """The median over runs of ``a``'s time less ``b``'s, each run timing both back to back."""
    a(), b()
    differences = []
    for _ in range(runs):
        times = []
        for fn in (a, b):
            gc.collect()
            start = CLOCK()
            fn()
            times.append(CLOCK() - start)
        differences.append(times[0] - times[1])
    return statistics.median(differences)


def large_model(path: Path, n: int = 181) -> Path:
    """An n×n-vertex grid in one group with UVs and analytic normals; n=181 gives 64,800 triangles, near the
    16-bit triangle limit."""
    import numpy as np
    from ms3d_writer import Group, Material, Ms3dSpec, Triangle, Vertex, write_ms3d

    xs, zs = np.meshgrid(np.linspace(-10, 10, n), np.linspace(-10, 10, n))
    ys = np.sin(xs) * np.cos(zs)
    normal = np.stack([-np.cos(xs) * np.cos(zs), np.ones_like(xs), np.sin(xs) * np.sin(zs)], axis=-1).reshape(-1, 3)
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    verts = [Vertex(tuple(float(c) for c in p)) for p in np.stack([xs, ys, zs], axis=-1).reshape(-1, 3)]
    tris = []
    for r in range(n - 1):
        for c in range(n - 1):
            a, b, d, e = r * n + c, r * n + c + 1, (r + 1) * n + c, (r + 1) * n + c + 1
            for idx in ((a, d, b), (b, d, e)):
                uv = [((i % n) / (n - 1), (i // n) / (n - 1)) for i in idx]
                tris.append(
                    Triangle(
                        idx,
                        normals=tuple(tuple(normal[i]) for i in idx),
                        s=tuple(u for u, _ in uv),
                        t=tuple(v for _, v in uv),
                        smoothing_group=1,
                    )
                )
    spec = Ms3dSpec(
        vertices=verts, triangles=tris, groups=[Group("grid", list(range(len(tris))), 0)], materials=[Material("grid")]
    )
    path.write_bytes(write_ms3d(spec))
    return path


def load_scene(path: Path) -> SceneData:
    from io_ms3d_mdl.formats.ms3d import read_ms3d
    from io_ms3d_mdl.scene.load import load_source
    from io_ms3d_mdl.scene.ms3d.convert import ms3d_to_scene
    from io_ms3d_mdl.scene.source.convert import SourceOptions

    if path.suffix.lower() == ".mdl":
        return load_source(str(path), SourceOptions())
    return ms3d_to_scene(read_ms3d(path))


def write_obj(scene: SceneData, obj_path: Path) -> None:
    """The same objects our import builds, in OBJ + MTL: positions, per-corner UVs and normals, the same materials
    and texture files. Coordinates are already in Blender's axes; import it with forward Y / up Z."""
    import numpy as np

    mtl = []
    for mat in scene.materials:
        mtl += [f"newmtl {mat.name}", "Kd {:.4f} {:.4f} {:.4f}".format(*mat.base_color), f"d {mat.alpha:.4f}"]
        if mat.base_texture is not None and mat.base_texture.resolved_path:
            mtl.append(f"map_Kd {os.path.relpath(mat.base_texture.resolved_path, obj_path.parent)}")
    obj_path.with_suffix(".mtl").write_text("\n".join(mtl) + "\n")
    lines = [f"mtllib {obj_path.with_suffix('.mtl').name}"]
    v_base = vt_base = 1
    for obj in scene.objects:
        mesh = obj.mesh
        lines.append(f"o {obj.name}")
        lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in mesh.positions]
        uvs = mesh.uvs if mesh.uvs is not None else np.zeros((len(mesh.triangles) * 3, 2))
        normals = mesh.corner_normals()
        if normals is None:
            normals = np.tile((0.0, 0.0, 1.0), (len(uvs), 1))
        lines += [f"vt {u:.6f} {v:.6f}" for u, v in uvs]
        lines += [f"vn {x:.6f} {y:.6f} {z:.6f}" for x, y, z in normals]
        slots = mesh.material_indices if mesh.material_indices is not None else np.zeros(len(mesh.triangles), int)
        current = None
        for t, (tri, slot) in enumerate(zip(mesh.triangles.tolist(), slots.tolist(), strict=True)):
            material = mesh.materials[slot] if slot < len(mesh.materials) else None
            if material is not None and material != current:
                lines.append(f"usemtl {scene.materials[material].name}")
                current = material
            lines.append(
                "f " + " ".join(f"{tri[k] + v_base}/{3 * t + k + vt_base}/{3 * t + k + vt_base}" for k in range(3))
            )
        v_base += len(mesh.positions)
        vt_base += len(uvs)
    obj_path.write_text("\n".join(lines) + "\n")


def bench_ms3d_parse(files: list[Path], runs: int) -> list[tuple[str, int, float, float, float]]:
    import assimp_py

    from io_ms3d_mdl.formats.ms3d import read_ms3d
    from io_ms3d_mdl.scene.ms3d.convert import ms3d_to_scene

    rows = []
    for path in files:
        try:
            assimp_py.import_file(str(path), 0)
        except Exception as exc:
            print(f"  {path.name}: Assimp cannot load it ({type(exc).__name__}: {exc}); skipped", file=sys.stderr)
            continue
        ours, peer = median_pair(lambda p=path: read_ms3d(p), lambda p=path: assimp_py.import_file(str(p), 0), runs)
        full, _ = median_pair(lambda p=path: ms3d_to_scene(read_ms3d(p)), lambda: None, runs)
        rows.append((path.name, path.stat().st_size, ours / peer, full / peer, peer))
    return rows


def bench_source_parse(files: list[Path], runs: int) -> list[tuple[str, int, float, float]]:
    """Our three readers against valvemdl reading the same MDL, VVD and VTX (its sidecar lookup is
    case-sensitive, so a model whose companions differ in case is reported, not timed)."""
    from valvemdl import Mdl

    from io_ms3d_mdl.formats.source import find_sidecars, read_mdl, read_vtx, read_vvd

    def ours(path: Path) -> None:
        read_mdl(path)
        sidecars = find_sidecars(str(path))
        if sidecars.vvd and sidecars.vtx:
            read_vvd(sidecars.vvd)
            read_vtx(sidecars.vtx)

    def peer(path: Path) -> None:
        model = Mdl(str(path))
        if find_sidecars(str(path)).vvd:
            model.vvd, model.vtx  # noqa: B018 - the properties parse the sidecars

    rows = []
    for path in files:
        try:
            peer(path)
        except Exception as exc:
            print(f"  {path.name}: valvemdl cannot load it ({type(exc).__name__}: {exc}); skipped", file=sys.stderr)
            continue
        a, b = median_pair(lambda p=path: ours(p), lambda p=path: peer(p), runs)
        size = sum(
            f.stat().st_size for f in path.parent.iterdir() if f.name.lower().startswith(path.stem.lower() + ".")
        )
        rows.append((path.name, size, a / b, b))
    return rows


def _fcurves(action: object) -> list:
    """An action's F-curves on 4.2 and on slotted actions (4.4+)."""
    if hasattr(action, "layers"):
        bags = [bag for layer in action.layers for strip in layer.strips for bag in strip.channelbags]
        return [fc for bag in bags for fc in bag.fcurves]
    return list(action.fcurves)


def bench_import(
    files: list[Path], runs: int, workdir: Path
) -> list[tuple[str, int, str, float, float, float | None, float]]:
    import bpy
    from addon_entry import load_addon

    addon = load_addon()
    addon.register()
    package = addon.__name__ + ".io_ms3d_mdl"
    loads = importlib.import_module(package + ".scene.load")
    options = static_options(package)
    build_only = _build_only_operator(package)
    bpy.utils.register_class(build_only)
    try:

        def empty() -> None:
            bpy.ops.wm.read_factory_settings(use_empty=True)

        # The OBJ side is geometry: Source models are imported without their (included) animations here; animation
        # import is measured on its own below.
        ops = {
            ".ms3d": bpy.ops.import_scene.ms3d,
            ".mdl": lambda **kw: bpy.ops.import_scene.source_mdl(import_animations=False, **kw),
        }
        rows = []
        for path in files:
            obj = workdir / (path.stem + ".obj")
            write_obj(load_scene(path), obj)
            op = ops[path.suffix.lower()]
            ours, peer = median_pair(
                lambda p=path, op=op: op(filepath=str(p)),
                lambda o=obj: bpy.ops.wm.obj_import(filepath=str(o), forward_axis="Y", up_axis="Z"),
                runs,
                setup=empty,
            )
            empty()
            op(filepath=str(path))
            tris = sum(len(o.data.polygons) for o in bpy.data.objects if o.type == "MESH")
            bones = sum(len(o.data.bones) for o in bpy.data.objects if o.type == "ARMATURE")
            keys = sum(len(fc.keyframe_points) for a in bpy.data.actions for fc in _fcurves(a))
            extra = (f"{bones} bones, weights" + (f", {keys:,} keys" if keys else "")) if bones else "—"
            still = None  # a MilkShape rig without its action, as Source models are timed (OBJ has no animation)
            if keys and path.suffix.lower() == ".ms3d":
                still, again = median_pair(
                    lambda p=path: bpy.ops.import_scene.ms3d(filepath=str(p), import_animation=False),
                    lambda o=obj: bpy.ops.wm.obj_import(filepath=str(o), forward_axis="Y", up_axis="Z"),
                    runs,
                    setup=empty,
                )
                still /= again
            _BUILD_ONLY["scene"] = loads.LOADERS[path.suffix.lower()](str(path), options[path.suffix.lower()])
            built, again = median_pair(
                bpy.ops.io_ms3d_mdl.bench_build_only,
                lambda o=obj: bpy.ops.wm.obj_import(filepath=str(o), forward_axis="Y", up_axis="Z"),
                runs,
                setup=empty,
            )
            rows.append((path.name, tris, extra, ours / peer, peer, still, built / again))
        return rows
    finally:
        bpy.utils.unregister_class(build_only)
        addon.unregister()


_BUILD_ONLY: dict[str, SceneData] = {}


def static_options(package: str) -> dict[str, object]:
    """Per suffix, the scene options of an import without animations, as imports are timed against the OBJ
    importer (the OBJ file has none). ``package`` is the add-on's package as Blender loaded it."""
    return {
        ".ms3d": importlib.import_module(package + ".scene.ms3d.convert").Ms3dOptions(import_animation=False),
        ".mdl": importlib.import_module(package + ".scene.source.convert").SourceOptions(import_animations=False),
    }


def _build_only_operator(package: str) -> type:
    """An operator (registered and undoable, as the importers are) that only builds ``_BUILD_ONLY["scene"]``,
    already read and converted: the floor of an import whose reading and converting cost nothing."""
    import bpy

    build_scene = importlib.import_module(package + ".blender.scene_builder").build_scene

    class IO_MS3D_MDL_OT_bench_build_only(bpy.types.Operator):
        bl_idname = "io_ms3d_mdl.bench_build_only"
        bl_label = "Build Only (benchmark)"
        bl_options = {"REGISTER", "UNDO"}  # noqa: RUF012 - Blender reads the class attribute

        def execute(self, context: bpy.types.Context) -> set[str]:
            build_scene(context, _BUILD_ONLY["scene"])
            return {"FINISHED"}

    return IO_MS3D_MDL_OT_bench_build_only


def fresh_armature(skeleton: SkeletonData) -> bpy.types.Object:
    """A factory-fresh file holding only ``skeleton``'s armature, in a "bench" collection: where every keyframe
    run starts."""
    import bpy

    from io_ms3d_mdl.blender.armature import build_armature

    bpy.ops.wm.read_factory_settings(use_empty=True)
    collection = bpy.data.collections.new("bench")
    bpy.context.scene.collection.children.link(collection)
    return build_armature(bpy.context, collection, skeleton)


def bench_keys(path: Path, runs: int) -> tuple[int, float, float]:
    """Keys written per second, ours and one ``keyframe_insert`` per key, building the same actions (all of the
    model's: one for a MilkShape file, every animation of a Source model)."""
    import bpy

    from io_ms3d_mdl.blender.animation import build_action

    scene = load_scene(path)
    skeleton, actions = scene.skeleton, scene.actions
    state: dict = {}

    def setup() -> None:
        state["arm"] = fresh_armature(skeleton)

    def ours() -> None:
        for action in actions:
            build_action(state["arm"], action, skeleton)

    def one_call_per_key() -> None:
        for action in actions:
            one_action_per_key(action)

    def one_action_per_key(action) -> None:
        arm = state["arm"]
        arm.animation_data_create().action = bpy.data.actions.new("baseline")
        for ch in action.channels:
            bone = arm.pose.bones[skeleton.bones[ch.bone].name]
            for frame, q in zip(ch.rotation_frames.tolist(), ch.rotations.tolist(), strict=True):
                bone.rotation_quaternion = q
                for i in range(4):
                    bone.keyframe_insert("rotation_quaternion", index=i, frame=frame, group=bone.name)
            for frame, v in zip(ch.location_frames.tolist(), ch.locations.tolist(), strict=True):
                bone.location = v
                for i in range(3):
                    bone.keyframe_insert("location", index=i, frame=frame, group=bone.name)

    keys = sum(4 * len(c.rotation_frames) + 3 * len(c.location_frames) for a in actions for c in a.channels)
    a, b = median_pair(ours, one_call_per_key, runs, setup=setup)
    return keys, keys / a, keys / b


def bench_decode(paths: list[Path], runs: int) -> tuple[int, float]:
    """Bone poses (one bone, one frame: a rotation and a position) decoded per second over every animation."""
    from io_ms3d_mdl.formats.source import read_mdl
    from io_ms3d_mdl.formats.source.animation import decode_animation
    from io_ms3d_mdl.formats.source.includes import load_ani

    models = [(read_mdl(p), p) for p in paths]
    loaded = [(m, load_ani(str(p), m)) for m, p in models]

    def decode_all() -> int:
        return sum(
            decode_animation(m, i, *(ani or (None, None))).rotations.shape[0] * len(m.bones)
            for m, ani in loaded
            for i in range(len(m.animations))
        )

    poses = decode_all()
    seconds, _ = median_pair(decode_all, lambda: None, runs)
    return poses, poses / seconds


VTF_PATHS = ("numpy", "srctools", "Blender import", "Blender decoded", "old import", "srctools import")


def bench_vtf(paths: list[Path], runs: int) -> list[tuple[str, int, float, dict[str, float | None]]]:
    """Megapixels per second per VTF format over the sample textures, every path side by side (alternating, medians):
    our numpy decoder; srctools (the compiled reference; None where it cannot read the format); the import as it is
    now: block formats go to Blender's own decoder, packed behind a DDS header (Blender decodes them when first
    shown: "Blender import"), then "Blender decoded" with that first decode forced; the "old import" (numpy
    decoding into a generated image packed as PNG), and the same with srctools decoding ("srctools import": what an
    importer built on srctools pays). Rows: (format, textures, megapixels, {path: MP/s})."""
    import bpy
    import numpy as np
    from srctools.vtf import VTF

    from io_ms3d_mdl.blender.material import ImageLoader
    from io_ms3d_mdl.errors import Warnings
    from io_ms3d_mdl.formats.source.vtf import read_vtf_bytes
    from io_ms3d_mdl.scene.types import ImageRef

    groups: dict[str, list[bytes]] = {}
    for path in paths:
        data = path.read_bytes()
        groups.setdefault(read_vtf_bytes(data, keep_blocks=True).format, []).append(data)

    def srctools(blobs: list[bytes], into_blender: bool = False) -> None:
        loader = ImageLoader(Warnings())
        for i, data in enumerate(blobs):
            vtf = VTF.read(io.BytesIO(data))
            frame = vtf.get()
            frame.load()
            if into_blender:
                pixels = np.frombuffer(bytes(frame._data), np.uint8).reshape(vtf.height, vtf.width, 4)
                loader.get(ImageRef(f"bench{i}.vtf", None, loadable=False, decoded=pixels))

    def load(blobs: list[bytes], keep_blocks: bool, decode: bool = False) -> None:
        loader = ImageLoader(Warnings())
        for i, data in enumerate(blobs):
            vtf = read_vtf_bytes(data, keep_blocks=keep_blocks)
            ref = ImageRef(f"bench{i}.vtf", None, loadable=False, blocks=vtf.blocks[0] if vtf.blocks else None)
            ref.pixels = vtf.faces[0] if vtf.faces else None
            image = loader.get(ref)
            if decode:
                image.size[0]  # reading the size makes Blender decode a DDS-packed image

    def clear() -> None:
        for image in list(bpy.data.images):
            bpy.data.images.remove(image)

    rows = []
    for fmt, blobs in sorted(groups.items()):
        try:
            srctools(blobs)
            peer = True
        except KeyError:  # a format srctools cannot read
            peer = False
        paths_run = {
            "numpy": lambda b=blobs: [read_vtf_bytes(d) for d in b],
            "srctools": (lambda b=blobs: srctools(b)) if peer else None,
            "Blender import": lambda b=blobs: load(b, keep_blocks=True),
            "Blender decoded": lambda b=blobs: load(b, keep_blocks=True, decode=True),
            "old import": lambda b=blobs: load(b, keep_blocks=False),
            "srctools import": (lambda b=blobs: srctools(b, into_blender=True)) if peer else None,
        }
        seconds = time_each({k: fn for k, fn in paths_run.items() if fn is not None}, runs, clear)
        images = [read_vtf_bytes(d) for d in blobs]
        megapixels = sum(image.width * image.height for image in images) / 1e6
        rates = {k: (megapixels / seconds[k] if k in seconds else None) for k in VTF_PATHS}
        rows.append((fmt, len(blobs), megapixels, rates))
    clear()
    return rows


def time_each(
    fns: dict[str, Callable[[], object]],
    runs: int,
    setup: Callable[[], object],
    pick: Callable[[list[float]], float] = statistics.median,
) -> dict[str, float]:
    """Seconds of every function (the median of ``runs``, or what ``pick`` takes), taking turns within each run
    (as ``median_pair`` does for two); ``setup`` runs untimed before every call."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():  # warm-up
        setup()
        fn()
    for _ in range(runs):
        for name, fn in fns.items():
            setup()
            gc.collect()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: pick(values) for name, values in times.items()}


def vtf_table(rows: list[tuple[str, int, float, dict[str, float | None]]]) -> list[str]:
    """MP/s per path, and each path's time against srctools' (below 1 is faster than srctools)."""

    def rate(value: float | None) -> str:
        return "—" if value is None else f"{value:,.1f}"

    def ratio(value: float | None, peer: float | None) -> str:
        return "—" if value is None or peer is None else f"{peer / value:.2f}"

    out = [
        "\n### VTF textures: MP/s per path (samples by format; time ÷ srctools in brackets, below 1 is faster)\n",
        "| format | textures | MP | numpy | srctools 2.7.0 | Blender import | Blender decoded | old import "
        "| srctools import |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fmt, count, megapixels, rates in rows:
        peer = rates["srctools"]
        cells = [
            rate(rates[k]) + (f" ({ratio(rates[k], peer)})" if peer and k != "srctools" else "") for k in VTF_PATHS
        ]
        out.append(f"| {fmt} | {count} | {megapixels:.2f} | " + " | ".join(cells) + " |")
    return out


# --- (e) animation import: ours against the code before vectorising --------------------------------------------------

ANIMATION_MODELS = (  # (relative to the samples)
    "source/Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl",  # 130 actions, 128 from its $includemodel
    "source/bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures.mdl",  # 97 actions from .ani blocks
    "source/Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl",  # 11 actions, up to 841 frames
    # Bloodlines (2531): 4 actions, a ragdoll pose keying every curve once among them; 2 long ones
    "vtmb/miracleflame__VTMB-Unofficial-Patch-by-Wesp/Basic_Patch/models/character/npc/common/swat/swat3.mdl",
    "vtmb/miracleflame__VTMB-Unofficial-Patch-by-Wesp/Basic_Patch/models/character/npc/common/doppleganger/"
    "doppleganger_female.mdl",
)


def legacy_curve_factory(action: bpy.types.Action, owner: bpy.types.ID) -> Callable[[str, int, str], bpy.types.FCurve]:
    """``curve_factory`` as it was (this and the three below: verbatim copies of the code before)."""
    import bpy

    anim = owner.animation_data or owner.animation_data_create()
    if not hasattr(action, "layers"):
        return lambda path, index, group: action.fcurves.new(path, index=index, action_group=group)
    anim.action = action
    slot = anim.action_slot
    if slot is None:
        slot = action.slots.new(id_type=owner.id_type, name=owner.name)
        anim.action_slot = slot
    layer = action.layers[0] if action.layers else action.layers.new("Layer")
    strip = layer.strips[0] if layer.strips else layer.strips.new(type="KEYFRAME")
    bag = strip.channelbag(slot, ensure=True)
    if bpy.app.version >= (5, 0, 0):
        return lambda path, index, group: bag.fcurves.new(path, index=index, group_name=group)
    groups: dict[str, bpy.types.ActionGroup] = {}

    def new(path: str, index: int, group: str) -> bpy.types.FCurve:
        fcurve = bag.fcurves.new(path, index=index)
        if group not in groups:
            groups[group] = bag.groups.new(group)
        fcurve.group = groups[group]
        return fcurve

    return new


def legacy_write_keys(fcurve: bpy.types.FCurve, frames: np.ndarray, values: np.ndarray) -> None:
    import numpy as np

    count = len(frames)
    points = fcurve.keyframe_points
    points.add(count)
    co = np.empty(count * 2, dtype=np.float32)
    co[0::2] = frames
    co[1::2] = values
    points.foreach_set("co", co)
    points.foreach_set("interpolation", np.full(count, 1, dtype=np.int32))
    fcurve.update()


def legacy_build_action(
    armature: bpy.types.Object, data: ActionData, skeleton: SkeletonData, limits: Limits | None = None
) -> bpy.types.Action:
    import bpy

    from io_ms3d_mdl.blender.animation import Limits

    action = bpy.data.actions.new(data.name)
    new_curve = legacy_curve_factory(action, armature)
    dropped = 0
    for channels in data.channels:
        name = skeleton.bones[channels.bone].name
        base = f'pose.bones["{bpy.utils.escape_identifier(name)}"]'
        rot_frames, rotations, lost_r = legacy_showable(channels.rotation_frames, channels.rotations)
        loc_frames, locations, lost_l = legacy_showable(channels.location_frames, channels.locations)
        dropped += lost_r + lost_l
        for i in range(4 if len(rot_frames) else 0):
            legacy_write_keys(new_curve(f"{base}.rotation_quaternion", i, name), rot_frames, rotations[:, i])
        for i in range(3 if len(loc_frames) else 0):
            legacy_write_keys(new_curve(f"{base}.location", i, name), loc_frames, locations[:, i])
    if dropped and limits is not None:
        limits.note(f"keys beyond frame ±{Limits.MAX_FRAME:,} dropped", dropped)
    armature.animation_data_create().action = action
    return action


def legacy_build_actions(
    armature: bpy.types.Object, data: list[ActionData], skeleton: SkeletonData, limits: Limits | None = None
) -> list[bpy.types.Action]:
    return [legacy_build_action(armature, action, skeleton, limits) for action in data]


def legacy_showable(frames: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    import numpy as np

    from io_ms3d_mdl.blender.animation import Limits

    keep = np.isfinite(frames) & (np.abs(frames) <= Limits.MAX_FRAME)
    if keep.all():
        return frames, values, 0
    return frames[keep], values[keep], int((~keep).sum())


@contextmanager
def legacy_animation(on: bool = True) -> Iterator[None]:
    """The import as it was before: per-bone decode and conversion, one animation at a time (copies kept in
    ``tests/test_keys_decode.py`` and ``tests/test_keys_reduce.py``, where they are the reference) and one numpy
    set-up per F-curve."""
    from test_keys_decode import legacy_decode_animation
    from test_keys_reduce import legacy_actions

    from io_ms3d_mdl.blender import scene_builder
    from io_ms3d_mdl.errors import FormatError
    from io_ms3d_mdl.formats.source.animation import SkippedAnimation
    from io_ms3d_mdl.scene.source import animation as source_animation

    def legacy_decode_animations(mdl, indices, ani_data=None, ani_path=None) -> list:
        out = []
        for index in indices:
            try:
                out.append(legacy_decode_animation(mdl, index, ani_data, ani_path))
            except (FormatError, SkippedAnimation) as exc:
                out.append(exc)
        return out

    patches = [
        (source_animation, "decode_animations", legacy_decode_animations),
        (source_animation, "build_channels", legacy_actions),
        (scene_builder, "build_actions", legacy_build_actions),
    ]
    saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
    try:
        for module, name, value in patches if on else []:
            setattr(module, name, value)
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def timed(fn: Callable[[], object], legacy: bool) -> Callable[[], object]:
    def run() -> object:
        with legacy_animation(legacy):
            return fn()

    return run


def bench_animation(path: Path, runs: int) -> dict[str, float]:
    """One model with every animation built, ours and before, alternating in one process (medians):
    decode + convert (the scene with all animations less the scene with none), curves (``build_actions`` for every
    action on a fresh armature), their sum, and the whole ``import_scene.source_mdl`` with all and with none."""
    import bpy

    from io_ms3d_mdl.blender import scene_builder
    from io_ms3d_mdl.scene.load import load_source
    from io_ms3d_mdl.scene.source.convert import SourceOptions

    def scene(animations: str) -> Callable[[], object]:
        return lambda: load_source(str(path), SourceOptions(animations=animations))

    out: dict[str, float] = {}
    out["scene_none"], _ = median_pair(scene("NONE"), lambda: None, runs)
    out["scene"], out["scene_before"] = median_pair(timed(scene("ALL"), False), timed(scene("ALL"), True), runs)
    # decode + convert: the median of each run's difference, the scenes with all and with none alternating (two
    # medians taken apart drift by more than a short model's animations cost on a busy machine)
    out["convert"] = median_difference(timed(scene("ALL"), False), scene("NONE"), runs)
    ours, before = scene("ALL")(), timed(scene("ALL"), True)()
    state: dict = {}

    def fresh() -> None:
        state["arm"] = fresh_armature(ours.skeleton)

    def curves(data: object, legacy: bool) -> Callable[[], None]:
        def run() -> None:
            with legacy_animation(legacy):
                scene_builder.build_actions(state["arm"], data.actions, data.skeleton)

        return run

    out["curves"], out["curves_before"] = median_pair(curves(ours, False), curves(before, True), runs, setup=fresh)

    def empty() -> None:
        bpy.ops.wm.read_factory_settings(use_empty=True)

    def operator(animations: str) -> Callable[[], object]:
        return lambda: bpy.ops.import_scene.source_mdl(filepath=str(path), animations=animations)

    out["import"], out["import_before"] = median_pair(
        timed(operator("ALL"), False), timed(operator("ALL"), True), runs, setup=empty
    )
    out["import_none"], _ = median_pair(operator("NONE"), lambda: None, runs, setup=empty)
    out["actions"] = len(ours.actions)
    out["keys"] = sum(4 * len(c.rotation_frames) + 3 * len(c.location_frames) for a in ours.actions for c in a.channels)
    out["keys_before"] = sum(
        4 * len(c.rotation_frames) + 3 * len(c.location_frames) for a in before.actions for c in a.channels
    )
    # Per-frame keys: the code before's (a key on every frame of each curve it wrote); where it did not decode the
    # animations (Bloodlines: fewer keys than ours after reduction), every frame of every curve of ours
    out["comparable"] = out["keys_before"] >= out["keys"]
    out["per_frame_keys"] = (
        out["keys_before"]
        if out["comparable"]
        else sum(
            a.props["source_frames"]
            * sum((4 if len(c.rotation_frames) else 0) + (3 if len(c.location_frames) else 0) for c in a.channels)
            for a in ours.actions
        )
    )
    out["curves_count"] = sum(
        (4 if len(c.rotation_frames) else 0) + (3 if len(c.location_frames) else 0)
        for a in ours.actions
        for c in a.channels
    )
    return out


def animation_tables(runs: int, only: list[str] = ()) -> list[str]:
    from io_ms3d_mdl import blender as addon  # registered as the package itself, so the copies can stand in

    models = [SAMPLES / r for r in ANIMATION_MODELS if (SAMPLES / r).is_file() and (not only or Path(r).name in only)]
    if not models:
        return []
    addon.register()
    try:
        rows = [(p.name, bench_animation(p, runs)) for p in models]
    finally:
        addon.unregister()
    out = [
        "\n### Animations, every one built: ours vs the code before (per-bone decode and conversion, a key on every "
        "frame, one numpy set-up per F-curve)\n",
        "Per-frame keys: one key per frame per channel, what the code before wrote. Decode + curves: the scene with "
        "all animations less the scene with none, plus `build_actions` for every action on a fresh armature.\n",
        "| model | actions | F-curves | per-frame keys | keys written | decode + convert (÷ before) "
        "| curves (÷ before) | decode + curves (÷ before) | per-frame keys/s | written keys/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in rows:
        convert, convert_before = m["convert"], m["scene_before"] - m["scene_none"]
        total, total_before = convert + m["curves"], convert_before + m["curves_before"]
        # the code before predates some layouts (Bloodlines): no ratio where it did not decode every frame
        comparable = m["comparable"]

        def ratio(a: float, b: float, comparable: bool = comparable) -> str:
            return f"({a / b:.2f})" if comparable else "(—)"

        out.append(
            f"| {name} | {m['actions']:.0f} | {m['curves_count']:,.0f} | {m['per_frame_keys']:,.0f} "
            f"| {m['keys']:,.0f} | {convert * 1e3:.1f} ms {ratio(convert, convert_before)} "
            f"| {m['curves'] * 1e3:.1f} ms {ratio(m['curves'], m['curves_before'])} "
            f"| {total * 1e3:.1f} ms {ratio(total, total_before)} | {m['per_frame_keys'] / total / 1e6:.2f} M "
            f"| {m['keys'] / total / 1e6:.2f} M |"
        )
    out += [
        "\n| model | `import_scene.source_mdl`, all animations: ours s | before s | ours ÷ before | no animations s |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, m in rows:
        ratio = f"{m['import'] / m['import_before']:.2f}" if m["comparable"] else "—"
        out.append(f"| {name} | {m['import']:.3f} | {m['import_before']:.3f} | {ratio} | {m['import_none']:.3f} |")
    return out


def keys_table(what: str, measured: tuple[int, float, float]) -> list[str]:
    keys, ours, baseline = measured
    return [
        f"\n### Keyframes: {what}, ours vs one `keyframe_insert` per key\n",
        "| keyframe points | ours keys/s | `keyframe_insert` keys/s | speed-up |",
        "|---:|---:|---:|---:|",
        f"| {keys:,} | {ours:,.0f} | {baseline:,.0f} | {ours / baseline:,.0f}× |",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--output", help="also write the markdown tables to this file")
    parser.add_argument("--animation-only", action="store_true", help="only (e): animations, ours vs before")
    parser.add_argument("--models", nargs="*", default=[], help="(e) only these models (file names)")
    parser.add_argument("--cpu", action="store_true", help="time CPU used by this process instead of wall time")
    parser.add_argument("--import-only", action="store_true", help="only (c): imports against the OBJ importer")
    parser.add_argument("--export-only", action="store_true", help="only (g): exports against the OBJ exporter")
    args = parser.parse_args()
    if importlib.util.find_spec("bpy") is None:
        import bootstrap

        return bootstrap.rerun_with_bpy(__file__)
    import bpy

    global CLOCK
    if args.cpu:
        CLOCK = time.process_time
    out: list[str] = []
    median = statistics.median
    if args.animation_only:
        clock = ", CPU time" if args.cpu else ""
        out.append(
            f"Blender {bpy.app.version_string}, Python {sys.version.split()[0]}, median of {args.runs} runs{clock}\n"
        )
        return report_tables(out + animation_tables(args.runs, args.models), args.output)
    if args.export_only:
        out.append(f"Blender {bpy.app.version_string}, Python {sys.version.split()[0]}, median of {args.runs} runs\n")
        return report_tables(out + export_table(args.runs), args.output)
    if args.import_only:
        out.append(f"Blender {bpy.app.version_string}, Python {sys.version.split()[0]}, median of {args.runs} runs\n")
        with tempfile.TemporaryDirectory() as tmp:
            return report_tables(out + import_table(args.runs, Path(tmp)), args.output)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ms3d = sorted((SAMPLES / "ms3d").rglob("*.ms3d"), key=lambda p: p.stat().st_size) if SAMPLES.is_dir() else []
        # Assimp 5.4.3 refuses MS3D files with more than 32,767 triangles, so parsing is compared on a 32k grid.
        mid = large_model(work / "grid_32k_tris.ms3d", 128)
        big = large_model(work / "grid_65k_tris.ms3d", 181)
        out.append(f"Blender {bpy.app.version_string}, Python {sys.version.split()[0]}, median of {args.runs} runs\n")

        out += [
            "### MilkShape parse: ours / Assimp (assimp-py 1.1.0, no post-processing)\n",
            "| file | bytes | read ÷ Assimp | read + scene ÷ Assimp | Assimp ms |",
            "|---|---:|---:|---:|---:|",
        ]
        rows = bench_ms3d_parse([*ms3d, mid], args.runs)
        out += [f"| {n} | {s:,} | {a:.2f} | {b:.2f} | {p * 1000:.2f} |" for n, s, a, b, p in rows]
        out.append(f"| **median** | | **{median(r[2] for r in rows):.2f}** | **{median(r[3] for r in rows):.2f}** | |")

        source = sorted((SAMPLES / "source").rglob("*.mdl")) if SAMPLES.is_dir() else []
        out += [
            "\n### Source parse: ours / valvemdl 0.0.2 (MDL + VVD + VTX)\n",
            "| model | bytes (all files) | ours ÷ valvemdl | valvemdl ms |",
            "|---|---:|---:|---:|",
        ]
        rows = bench_source_parse(source, args.runs)
        out += [f"| {n} | {s:,} | {a:.3f} | {p * 1000:.1f} |" for n, s, a, p in rows]
        if rows:
            out.append(f"| **median** | | **{median(r[2] for r in rows):.3f}** | |")

        out += import_table(args.runs, work, [mid, big])

        textures = sorted((SAMPLES / "source").rglob("*.vtf")) if SAMPLES.is_dir() else []
        if textures:
            out += vtf_table(bench_vtf(textures, args.runs))
        dwarf = SAMPLES / "ms3d/akadjoker__H3DView/media/dwarf.ms3d"
        if dwarf.is_file():
            out += keys_table("dwarf.ms3d's action (44 bones)", bench_keys(dwarf, max(3, args.runs // 3)))
        anims = [
            SAMPLES / "source" / r
            for r in (
                "Lambdagon__lambdas-weapon-pack/models/player/civilian_animations.mdl",
                "bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures.mdl",
                "siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl",
            )
        ]
        if all(p.is_file() for p in anims):
            poses, rate = bench_decode(anims, args.runs)
            out += [
                "\n### Source animation decoding (236 animations of three models, .ani blocks included)\n",
                "| bone poses decoded | bone poses per second |",
                "|---:|---:|",
                f"| {poses:,} | {rate:,.0f} |",
            ]
            postures = anims[1]
            keys, ours, baseline = bench_keys(postures, max(3, args.runs // 3))
            out += keys_table("male_postures.mdl's 97 actions", (keys, ours, baseline))
            from io_ms3d_mdl.blender import register, unregister

            register()
            try:
                times = []
                for _ in range(3):
                    bpy.ops.wm.read_factory_settings(use_empty=True)
                    start = time.perf_counter()
                    bpy.ops.import_scene.source_mdl(filepath=str(postures))
                    times.append(time.perf_counter() - start)
                out.append(
                    f"\nWhole import of male_postures.mdl (97 actions): {statistics.median(times):.2f} s "
                    f"(median of 3); the same keys through `keyframe_insert` alone take {keys / baseline:.1f} s."
                )
            finally:
                unregister()
        out += animation_tables(args.runs)
        out += export_table(args.runs)
    return report_tables(out, args.output)


def export_table(runs: int) -> list[str]:
    """(g): ``bench_export.py``'s tables (it builds its own scenes; the factory settings are read first)."""
    import bench_export

    return bench_export.export_tables(runs)


SMALL_SOURCE = (  # Source models under 500 triangles (physics hulls included), next to the rigged civilian
    "Igrium__portal_nrtx/models/props_pipes/pipe02_45degree01.mdl",
    "icewind1991__vmdl/data/barrel01.mdl",
)


def import_table(runs: int, work: Path, grids: list[Path] | None = None) -> list[str]:
    """(c): every MilkShape sample over 5 kB, the synthetic grids, small Source props and the rigged civilian."""
    ms3d = sorted((SAMPLES / "ms3d").rglob("*.ms3d"), key=lambda p: p.stat().st_size) if SAMPLES.is_dir() else []
    civilian = SAMPLES / "source/Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"
    source = [SAMPLES / "source" / r for r in SMALL_SOURCE] + [civilian]
    files = [*(f for f in ms3d if f.stat().st_size > 5000), *(grids or []), *(f for f in source if f.is_file())]
    rows = bench_import(files, runs, work)
    median = statistics.median
    out = [
        "\n### Import into Blender: ours / `wm.obj_import` on the same geometry\n",
        "| file | faces | ours also builds | ours ÷ OBJ importer | … without the action | build only ÷ OBJ | OBJ ms |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    out += [
        f"| {n} | {t:,} | {x} | {r:.2f} | {'—' if s is None else f'{s:.2f}'} | {b:.2f} | {p * 1000:.1f} |"
        for n, t, x, r, p, s, b in rows
    ]
    small = [r for r in rows if r[1] < 500]
    out.append(
        f"| **median, models without a rig** | | | **{median(r[3] for r in rows if r[2] == '—'):.2f}** | | "
        f"**{median(r[6] for r in rows if r[2] == '—'):.2f}** | |"
    )
    out.append(
        f"| **median, under 500 faces** | | | **{median(r[3] for r in small):.2f}** | "
        f"**{median(r[3] if r[5] is None else r[5] for r in small):.2f}** | **{median(r[6] for r in small):.2f}** | |"
    )
    everything = f"**{median(r[3] for r in rows):.2f}** | | **{median(r[6] for r in rows):.2f}**"
    out.append(f"| **median, all** | | | {everything} | |")
    out.append(
        "\n*Build only*: our Blender builder alone, in an undoable operator like the importers, from the scene "
        "description already read and converted (animations off), against the OBJ importer in the same run: what "
        "an import would cost if reading and converting took no time."
    )
    return out


if __name__ == "__main__":
    from bench_report import leave

    leave(main())
