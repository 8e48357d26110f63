"""Must-be-true 1, read back independently: for every Source and GoldSrc sample (coverage files included), Blender
Source Tools (tests/bst_oracle.py; GPL, set up by scripts/oracle_bst.py, never vendored) imports the QC we write
and every file it names, and what it builds equals our own import of the ``.mdl``: the bones and their rest frames
(within 1e-5 of the model's size), the reference meshes corner by corner (positions, normals, UVs, weights by bone,
materials; order-free), every frame of every animation of the model's own (within 1e-4), and the shape keys.

Both sides in Source's space (see bst_oracle's docstring): ours imported with units SOURCE, Source's axes and
bone_orientation SOURCE; Blender Source Tools with its default Z up. One transform of studiomdl's is undone on our
side: a single-bone ``$staticprop`` is compiled turned 90° about Z, and its SMD holds it before that turn
(``x' = y, y' = -x``). studiomdl also turns every animation's root bones
(GoldSrc: 90° about Z unless the QC's ``rotate`` says otherwise; Source likewise, and about X for ``$upaxis Y``
models), and the decompiler writes them turned back: our poses are turned by whichever of those turns brings frame
0 closest (``unturned``) before every frame is compared. GoldSrc animations' linear motion is carried in the SMD by
design (``with_linear_motion``), and so is the motion bone's position that the engine zeroes for ``X``/``Y``/``Z``
sequences (``engine_in_place``); a GoldSrc blend's SMD is paired with our animation by sequence and blend
(``blends_by_file``), not by name. Blender Source Tools imports with quaternion keys (its default Euler keys lose
precision near gimbal lock), and its VTA reader's limits are allowed for (``unreached_by_bst_vta``). GoldSrc UVs
are compared within the 1¼ texels the SMD's in-texel points differ from our import's by design (see ``half_texel``),
and not at all on chrome textures (the engine makes their UVs from the view). What is not compared, and why: delta
animations (Blender Source Tools imports an SMD's frames as absolute poses; ours are additive layers) and the
animations of included models (ours builds them under the includer's bones by name; they have their own tests).

Blender Source Tools reads a ``$sequence``'s file only from the ``$sequence`` line itself (a file named on the next
line, inside braces, is not imported): an animation it did not import from the QC is imported from its SMD directly,
so its frames are still compared, and the test then fails naming the layout, since a user's import would miss it.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import bst_oracle
import numpy as np
import pytest
import qc_grammar
from conftest import bpy
from test_decompile_outputs import models, sample_id

from io_ms3d_mdl.decompile import decompile
from io_ms3d_mdl.decompile.source.animations import TURNS as SOURCE_TURNS
from io_ms3d_mdl.formats.goldsrc import read_goldsrc
from io_ms3d_mdl.scene.goldsrc.animation import MOTION_AXES, offers

pytestmark = [pytest.mark.blender, pytest.mark.long]
SUFFIX = re.compile(r"\.\d{3}$")  # Blender's .001 on a name taken by the other side
ROT_MODE = "QUATERNION"  # Blender Source Tools' rotation keys (see the test)


def plain(name: str) -> str:
    """A material as both sides name it: the SMD keeps the model's texture name whole (``models\\x\\metal``), our
    import its last step; Blender adds ``.001`` to a name the other side took first; case as the engine ignores it;
    a GoldSrc SMD names the texture's file (``.bmp``), our import the texture."""
    return SUFFIX.sub("", name).replace("\\", "/").rsplit("/", 1)[-1].lower().removesuffix(".bmp").removesuffix(".bmp")


def our_import(bpy, path: Path):
    before, actions_before = set(bpy.data.objects), set(bpy.data.actions)
    result = bpy.ops.import_scene.source_mdl(
        filepath=str(path),
        units="SOURCE",
        bone_orientation="SOURCE",
        armature_for_static_props=True,
        import_physics=False,
        import_attachments=False,
        find_materials=False,
        animations="OWN",
    )
    assert result == {"FINISHED"}
    new = [o for o in bpy.data.objects if o not in before]
    armature = next((o for o in new if o.type == "ARMATURE"), None)
    meshes = [o for o in new if o.type == "MESH"]
    actions = [a for a in bpy.data.actions if a not in actions_before]
    return armature, meshes, actions


def named_files(statements, folder: Path | None = None) -> tuple[list[str], list[str], list[str]]:
    """(reference SMDs of LOD 0, animation SMDs, VTAs) a QC names."""
    references, animations, flexes = [], [], []
    for statement in statements:
        args = statement.args
        if statement.command in ("$body", "$model") and len(args) > 1:
            references.append(args[1].value)
        for before, after in itertools.pairwise(args):
            if statement.command == "$bodygroup" and before.text == b"studio" and not before.quoted:
                references.append(after.value)
            if before.text == b"flexfile" and not before.quoted:
                flexes.append(after.value)
        if statement.command in ("$sequence", "$animation"):  # a name is a file when it is one (".smd" implied)
            animations += [
                t.value if t.value.lower().endswith(".smd") else t.value + ".smd"
                for t in args[1:]
                if folder is not None
                and t.value not in ("{", "}")
                and any((folder / n.replace("\\", "/")).is_file() for n in (t.value, t.value + ".smd"))
            ]
    return references, animations, flexes


STATIC_TURN = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # x' = y, y' = -x (studiomdl's, undone)


def turned(mesh: bst_oracle.Triangles) -> bst_oracle.Triangles:
    return bst_oracle.Triangles(
        mesh.positions @ STATIC_TURN.T,
        mesh.normals @ STATIC_TURN.T,
        mesh.uvs,
        mesh.weights,
        mesh.materials,
        {k: v @ STATIC_TURN.T for k, v in mesh.shapes.items()},
    )


def size_of(meshes, armature) -> float:
    points = [np.array(o.matrix_world) @ np.append(c, 1.0) for o in meshes for c in o.bound_box]
    if armature is not None:
        points += [np.append(b.head_local, 1.0) for b in armature.data.bones]
    return max(float(np.ptp(np.array(points)[:, :3], axis=0).max()), 1.0) if points else 1.0


def _turns() -> list[np.ndarray]:
    """studiomdl's turns of an animation's root bones (none; a quarter about Z; and for ``$upaxis Y`` models also a
    quarter about X), as the decompiler undoes them."""
    rx = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    found = []
    undone = [t.T for t in SOURCE_TURNS]  # the decompiler's own (Rz·Rx undone is Rx⁻¹·Rz⁻¹, not Rz⁻¹·Rx⁻¹)
    for m in (np.eye(3), STATIC_TURN, STATIC_TURN @ rx, STATIC_TURN @ rx.T, rx, rx.T, *undone):
        turn = np.eye(4)
        turn[:3, :3] = m
        found.append(turn)
    return found


TURNS = _turns()


def unturned(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Our poses turned as the SMD holds them: studiomdl turns every animation's roots (GoldSrc by default a quarter
    about Z; Source likewise, and about X for ``$upaxis Y`` models), so the decompiler writes them turned back. The
    turn is the one of these that brings frame 0 closest; every frame is then compared with it."""
    names = [n for n in ours if n in theirs]

    def distance(turn: np.ndarray) -> float:
        return max((float(np.abs(turn @ ours[n][0] - theirs[n][0]).max()) for n in names), default=0.0)

    best = min(TURNS, key=distance)
    return {name: best @ frames for name, frames in ours.items()}


def with_linear_motion(ours: dict, theirs: dict, roots: list[str], size: float) -> dict:
    """GoldSrc by design: a sequence's linear motion (``LX``/``LY``/``LZ``, which the engine moves the entity by and
    our import leaves out of the pose) is carried in the SMD's root positions, so a recompile finds it again. When
    the root's difference grows exactly linearly with the frame (within 1e-4 of the model's size), that motion is
    added to every bone of ours; any other difference stays and is reported."""
    for name in roots:
        if name not in theirs or name not in ours or len(ours[name]) < 2:
            continue
        drift = theirs[name][:, :3, 3] - ours[name][:, :3, 3]
        k = np.arange(len(drift))[:, None]
        motion = k * (drift[-1] / (len(drift) - 1))
        if np.abs(drift - motion).max() <= 1e-4 * size and np.abs(drift).max() > 0:
            moved = {}
            for bone, frames in ours.items():
                moved[bone] = frames.copy()
                moved[bone][:, :3, 3] += motion
            return moved
    return ours


def blends_by_file(statements, folder: Path) -> dict[str, tuple[str, int, int]]:
    """GoldSrc: each animation SMD a ``$sequence`` names -> (that sequence's name, how many before it had that name,
    blend): the files on its line are its blends in order. (The decompiler's ``<sequence>_blend1``, ``_blend2``… are
    our import's blends 0, 1…, which it names ``<sequence>``, ``<sequence>_blend1``…, and two sequences may share a
    name: files and actions are paired by sequence and blend, see :func:`offered_blends`.)"""
    found, seen = {}, {}
    for statement in statements:
        if statement.command == "$sequence" and statement.args:
            name = statement.args[0].value
            _, files, _ = named_files([statement], folder)
            for blend, relative in enumerate(files):
                found[relative] = (name, seen.get(name, 0), blend)
            seen[name] = seen.get(name, 0) + 1
    return found


def offered_blends(gs) -> dict[tuple[str, int, int], tuple[str, int]]:
    """(sequence name, how many before it had that name, blend) -> (the name our import gives that animation, its
    sequence)."""
    found, seen, counted = {}, {}, set()
    for s, blend, name in offers(gs):
        label = gs.sequences[s].label
        if s not in counted:
            counted.add(s)
            seen[label] = seen.get(label, -1) + 1
        found[(label, seen[label], blend)] = (name, s)
    return found


def engine_in_place(theirs: dict, gs, seq) -> dict:
    """GoldSrc by design: with ``X``/``Y``/``Z`` in a sequence's motion type the engine zeroes the motion bone's
    position on those axes as it poses every frame (``StudioCalcRotations`` in the HL SDK's
    ``cl_dll/StudioModelRenderer.cpp``), and our import shows that; ``studiomdl`` stores the positions untouched (its
    ``ExtractMotion`` has that zeroing commented out), so the SMD holds them for a recompile, and the ``X`` on the
    ``$sequence`` line brings the zeroing back. Blender Source Tools reads only the file from a ``$sequence`` line
    and shows the SMD's positions. Here its poses get the engine's zeroing: the motion bone's local position on
    those axes is taken out of it and every bone under it."""
    axes = [axis for flag, axis in MOTION_AXES if seq.motiontype & flag]
    if not axes or not 0 <= seq.motionbone < len(gs.bone_names):
        return theirs
    bone, parents = seq.motionbone, gs.bones["parent"]
    name, parent = gs.bone_names[bone], int(parents[bone])
    if name not in theirs:
        return theirs
    local = theirs[name][:, :3, 3].copy()
    if parent >= 0:  # (the local position in the parent's frame, the shift back in model space)
        frame = theirs[gs.bone_names[parent]]
        local = np.einsum("fji,fj->fi", frame[:, :3, :3], local - frame[:, :3, 3])
    shift = np.zeros_like(local)
    shift[:, axes] = local[:, axes]
    if parent >= 0:
        shift = np.einsum("fij,fj->fi", frame[:, :3, :3], shift)
    under = {bone}
    for b in range(bone + 1, len(parents)):  # (parents before children)
        if int(parents[b]) in under:
            under.add(b)
    moved = dict(theirs)
    for b in under:
        if gs.bone_names[b] in moved:
            moved[gs.bone_names[b]] = moved[gs.bone_names[b]].copy()
            moved[gs.bone_names[b]][:, :3, 3] -= shift
    return moved


def half_texel(out: Path) -> float:
    """GoldSrc stores UVs as whole texels ``s = trunc(u·(size-1))``; our import shows ``s / size``, while the SMD
    holds a point inside the texel that a recompile truncates back to ``s`` (``decompile/goldsrc/geometry``:
    ``(s + ¾ - ½·s/(size-1)) / (size-1)``): by design they are up to ``1.25 / (size - 1)`` apart (¾ texel at the
    start of the range, 1¼ at its end), here for the smallest texture. (The name is the historical one, when the
    SMD held texel centres.)"""
    sizes = []
    for bmp in out.glob("*.bmp"):
        head = bmp.read_bytes()[:26]
        sizes += [
            int.from_bytes(head[18:22], "little", signed=True),
            abs(int.from_bytes(head[22:26], "little", signed=True)),
        ]
    return 1.25 / max(min(sizes) - 1, 1) + 1e-4 if sizes else 1e-4


def unreached_by_bst_vta(theirs: bst_oracle.BstModel, stems: list[str]) -> set[tuple[float, ...]]:
    """Where Blender Source Tools' VTA reader (``import_smd.py``, ``readShapes``) cannot give each vertex its own
    offset, as positions rounded to 1e-4. It maps every VTA vertex to one mesh vertex, the first at its position
    (``mesh_cos.index(co)``): where its mesh holds several vertices at one position (it keeps vertices with other
    bone weights apart, and gives a face over another face vertices of its own) only that first one moves, by the
    offset of the last VTA vertex mapped to it. And it finds the position through a Shrinkwrap, then exact, else
    3-decimal, equality, which misses vertices on a rounding boundary (scout's 16, e.g. y = 75.9635: it warns that
    they "were not matched to a mesh vertex" and lists them in the "Unmatched VTA" group of its "VTA vertices"
    object); those stay unmoved."""
    found: set[tuple[float, ...]] = set()
    for stem in stems:
        obj = theirs.meshes[stem]
        co = np.empty(len(obj.data.vertices) * 3)
        obj.data.vertices.foreach_get("co", co)
        co = co.reshape(-1, 3) @ np.array(obj.matrix_world)[:3, :3].T + np.array(obj.matrix_world)[:3, 3]
        keys, counts = np.unique(np.round(co, 4), axis=0, return_counts=True)
        found.update(map(tuple, keys[counts > 1].tolist()))
    for name, obj in theirs.meshes.items():
        group = obj.vertex_groups.get("Unmatched VTA") if name.startswith("VTA vertices") else None
        if group is not None:
            world = np.array(obj.matrix_world)
            found.update(
                tuple(np.round(world[:3, :3] @ np.array(v.co, np.float64) + world[:3, 3], 4).tolist())
                for v in obj.data.vertices
                if any(g.group == group.index for g in v.groups)
            )
    return found


def as_bst_vta_reads(ours_shape, their_shape, their_positions, matched, unreached, size) -> np.ndarray:
    """Their shape, each corner at an ``unreached`` position (see :func:`unreached_by_bst_vta`) taken as ours when
    Blender Source Tools left it where its VTA reader does: unmoved, or at the shape position of one of our corners
    at that place. ``matched``: (partner, corners) of ``bst_oracle.match_triangles``."""
    partner, corners = matched
    ours = np.empty_like(their_shape)
    ours[partner[:, None], corners] = ours_shape  # ours in their corner order
    keys = [tuple(k) for k in np.round(their_positions, 4).reshape(-1, 3).tolist()]
    at = np.array([k in unreached for k in keys]).reshape(their_positions.shape[:2])
    tolerance = 1e-5 * size
    unmoved = np.abs(their_shape - their_positions).max(axis=2) <= tolerance
    own = np.abs(their_shape - ours).max(axis=2) <= tolerance
    settled = their_shape.copy()
    settled[at & (unmoved | own)] = ours[at & (unmoved | own)]
    rest = np.argwhere(at & ~unmoved & ~own)
    if len(rest):  # another vertex's offset at the same place
        there: dict[tuple, list[np.ndarray]] = {}
        for t, c in np.argwhere(at).tolist():
            there.setdefault(keys[t * 3 + c], []).append(ours[t, c])
        for t, c in rest.tolist():
            if any(np.abs(their_shape[t, c] - o).max() <= tolerance for o in there[keys[t * 3 + c]]):
                settled[t, c] = ours[t, c]
    return settled


def flex_frames(statements) -> dict[str, str]:
    """``flex NAME frame N`` (and ``flexpair``) in the QC's $model blocks: frame number -> flex name."""
    names = {}
    for statement in statements:
        tokens = [t.value for t in statement.args]
        for i, token in enumerate(tokens[:-3]):
            if token in ("flex", "flexpair") and "frame" in tokens[i + 2 : i + 8]:
                j = tokens.index("frame", i + 2)
                names[tokens[j + 1]] = tokens[i + 1]
    return names


ROLES = ("lowerer", "neutral", "raiser")


def eyelid_frames(statements) -> dict[str, list[str]]:
    """``eyelid NAME VTA lowerer F T neutral F T raiser F T ...`` lines: lid name -> its shapes' frames (not 0, the
    VTA's base). Our import keeps a lid as one shape key, its shapes summed (they share its descriptor)."""
    lids = {}
    for statement in statements:
        tokens = [t.value for t in statement.args]
        for i, token in enumerate(tokens[:-2]):
            if token == "eyelid":
                frames = [tokens[j + 1] for j in range(i + 3, len(tokens) - 1) if tokens[j] in ROLES]
                lids[tokens[i + 1]] = [f for f in frames if f != "0"]
    return lids


def evaluate_ours(bpy, armature, action, frames: int):
    anim = armature.animation_data_create()
    anim.use_nla = False
    anim.action = action
    if getattr(action, "slots", None) and hasattr(anim, "action_slot"):
        anim.action_slot = action.slots[0]
    # Our import keeps an animation's own rate by spacing its keys in scene frames (24 fps in a 30 fps scene: 1.25
    # apart), where Blender Source Tools keys SMD frame k at frame k: frame k of ours is k steps of that spacing.
    start, end = (float(f) for f in action.frame_range)
    step = (end - start) / (frames - 1) if frames > 1 and end > start else 1.0
    return bst_oracle.pose_matrices(armature, [start + k * step for k in range(frames)])


# Where Blender Source Tools and our import still disagree (each listed in BENCHMARKS; the six of round 9 are
# explained there and pass): not hidden, but expected, so every other sample keeps its full check. ``strict=False``:
# a pairing that comes right on one Blender is welcome, and the list is pruned by hand.
NO_SKELETON = (
    "Blender Source Tools' QC import makes an armature only from a reference mesh; an animation-only QC has none"
)
KNOWN = {}
if bpy is not None and bpy.app.version < (4, 4, 0):  # (one action per SMD there: Blender Source Tools before slots)
    KNOWN["civilian_animations.mdl"] = (
        "on Blender 4.2, read onto the armature of its first SMD, 36 of 79 animations are equal; in the other 43 (the "
        "run blends' a_run*_MELEE and the like) bip_pelvis sits 28-30 units apart from frame 0 on. From 4.5 on (Blender "
        "Source Tools with action slots) all 79 are equal (open)"
    )
QC_IMPORT_KNOWN = {name: NO_SKELETON for name in ("civilian_animations.mdl", "male_postures.mdl")}
QC_IMPORT_KNOWN["doppleganger_female.mdl"] = (  # Bloodlines: its .vtx is not in the repository, so no mesh either
    "Blender Source Tools' QC import makes an armature only from a reference mesh; a model without its .vtx has none"
)


def known(table: dict[str, str]) -> list:
    """The samples, each one of ``table`` marked as an expected failure with its reason."""
    out = []
    for path in models():
        reason = table.get(os.path.basename(str(path)))
        marks = [pytest.mark.xfail(reason=reason, strict=False)] if reason else []
        out.append(pytest.param(path, marks=marks, id=sample_id(path)))
    return out


@pytest.mark.parametrize("path", known(KNOWN))
def test_blender_source_tools_reads_back_what_we_import(path, tmp_path, blender):
    bpy = blender
    bst_oracle.enable_bst(bst_oracle.require_bst())
    out = tmp_path / path.stem
    result = decompile(str(path), str(out))
    statements = qc_grammar.parse((out / result.qc).read_bytes(), result.qc, strict=False)  # (test_decompile_outputs)
    references, animation_files, _ = named_files(statements, out)

    skeleton = out / animation_files[0] if not references and animation_files else None  # (animation-only)
    # First: its objects keep the names of its files. Quaternion keys: Blender Source Tools' default Euler keys are
    # what Blender decomposes from the float32 pose matrix it sets (import_smd.py, applyFrames: ``bone.matrix = ...``
    # then ``bone.rotation_euler`` keyed), which near gimbal lock loses precision: v_gauss's Bone02, whose
    # rest-relative rotation is 5e-5 rad from 90° about Y, came out 2.4e-3 rad off in the frames where it sits there,
    # and within 1.3e-5 with quaternion keys.
    theirs = bst_oracle.import_qc(out / result.qc, skeleton, rot_mode=ROT_MODE)
    armature, meshes, actions = our_import(bpy, path)
    if armature is not None and theirs.armature is None:
        pytest.fail(
            "Blender Source Tools built no armature from the QC (its QC import makes the skeleton from a reference "
            "mesh: an animation-only QC, or one whose $definebone it does not read, gives it none)"
        )
    size = size_of(meshes, armature)
    problems: list[str] = []

    if armature is not None and skeleton is None:  # (an animation SMD's first frame is no rest pose to compare)
        bst_oracle.compare_rest(bst_oracle.rest_matrices(armature), bst_oracle.rest_matrices(theirs.armature), size)

    stems = [Path(r.replace("\\", "/")).stem for r in references]
    missing = [s for s in stems if s not in theirs.meshes and s.lower() not in {m.lower() for m in theirs.meshes}]
    assert not [s for s in missing if s], f"Blender Source Tools built no mesh for {missing}"
    ours_mesh = bst_oracle.triangles(meshes)
    their_mesh = bst_oracle.triangles([theirs.meshes[s] for s in stems if s in theirs.meshes])
    static = any(s.command == "$staticprop" for s in statements) and armature and len(armature.data.bones) == 1
    if static:
        ours_mesh = turned(ours_mesh)  # studiomdl turns a static prop 90° about Z; its SMD is the model before that
    ours_mesh.materials = [plain(m) for m in ours_mesh.materials]
    their_mesh.materials = [plain(m) for m in their_mesh.materials]
    ours_mesh.shapes, their_shapes = {}, their_mesh.shapes  # shape keys: compared by name below
    their_mesh.shapes = {}
    goldsrc = result.engine == "goldsrc"
    uv_tolerance = half_texel(out) if goldsrc else 1e-4
    chrome = {  # the engine makes a chrome texture's UVs from the view: what either side stores is moot
        plain(s.args[0].value).removesuffix(".bmp")
        for s in statements
        if s.command == "$texrendermode" and len(s.args) > 1 and s.args[1].value.lower() == "chrome"
    }
    for mesh in (ours_mesh, their_mesh):
        moot = np.array(  # (GoldSrc's studiomdl makes every texture named *chrome* chrome)
            [plain(m).removesuffix(".bmp") in chrome or (goldsrc and "chrome" in plain(m)) for m in mesh.materials],
            bool,
        )
        if moot.any():
            mesh.uvs = mesh.uvs.copy()
            mesh.uvs[moot] = 0.0
    try:  # a difference here is reported with the others: the animations are still compared
        bst_oracle.compare_meshes(ours_mesh, their_mesh, size, uv_tolerance)
    except AssertionError as exc:
        problems.append(f"meshes: {exc}")
    ours_shapes = turned(bst_oracle.triangles(meshes)).shapes if static else bst_oracle.triangles(meshes).shapes
    names = flex_frames(statements)  # Blender Source Tools names a VTA's shapes by frame; the QC says whose
    their_shapes = {names.get(k, k): v for k, v in their_shapes.items()}
    # Eyelids are left out on both sides: our import keeps a lid as one key (its shapes summed: they share its
    # descriptor), the QC gives each shape a frame, and Blender Source Tools builds those frames as it builds
    # eyelids, not as plain shapes. test_decompile_eyelids and test_decompile_bloodlines check the lids' frames.
    for lid, frames in eyelid_frames(statements).items():
        ours_shapes.pop(lid, None)
        for frame in frames:
            their_shapes.pop(frame, None)
    unreached = unreached_by_bst_vta(theirs, [s for s in stems if s in theirs.meshes]) if their_shapes else set()
    if unreached:
        try:
            partner, rotation = bst_oracle.match_triangles(ours_mesh, their_mesh, 1e-5 * size, uv_tolerance)
        except AssertionError:  # (the meshes differ: reported above)
            unreached = set()
        else:
            matched = partner, (np.arange(3)[None, :] + rotation[:, None]) % 3
    for name in set(ours_shapes) & set(their_shapes):
        if unreached:
            their_shapes[name] = as_bst_vta_reads(
                ours_shapes[name], their_shapes[name], their_mesh.positions, matched, unreached, size
            )
        ours_one = bst_oracle.Triangles(
            ours_mesh.positions,
            ours_mesh.normals,
            ours_mesh.uvs,
            ours_mesh.weights,
            ours_mesh.materials,
            {name: ours_shapes[name]},
        )
        theirs_one = bst_oracle.Triangles(
            their_mesh.positions,
            their_mesh.normals,
            their_mesh.uvs,
            their_mesh.weights,
            their_mesh.materials,
            {name: their_shapes[name]},
        )
        try:
            bst_oracle.compare_meshes(ours_one, theirs_one, size)
        except AssertionError as exc:
            problems.append(str(exc))
    if ours_shapes or their_shapes:
        common = set(ours_shapes) & set(their_shapes)
        if set(ours_shapes) != set(their_shapes):
            problems.append(
                f"shape keys only here: {sorted(set(ours_shapes) - common)[:5]}, only there: "
                f"{sorted(set(their_shapes) - common)[:5]}"
            )

    by_stem = {}
    for action in actions:
        name = str(action.get("source_animation", action.name)).lstrip("@")
        if not action.get("source_delta"):
            by_stem[name] = action
    if goldsrc:  # a blend's file is paired with our blend by sequence and blend (see blends_by_file)
        gs = read_goldsrc(path)
        offered = offered_blends(gs)
        paired = {
            Path(f.replace("\\", "/")).stem: offered[key]
            for f, key in blends_by_file(statements, out).items()
            if key in offered and offered[key][0] in by_stem
        }
        by_stem = {stem: by_stem[name] for stem, (name, _) in paired.items()}
        unpaired = [f for f in animation_files if Path(f.replace("\\", "/")).stem not in by_stem]
        if unpaired:
            problems.append(f"no animation of ours for {len(unpaired)} SMDs ({unpaired[:3]})")
    compared = 0
    roots = [b.name for b in armature.data.bones if b.parent is None] if armature is not None else []
    for relative in animation_files:
        stem = Path(relative.replace("\\", "/")).stem
        if "/" in relative.replace("\\", "/").removeprefix("anims/") or stem not in by_stem:
            continue  # an included model's, or a delta: not compared (see the docstring)
        if stem not in theirs.animations:  # its QC import skipped it (test_..._qc_import_reads_every_file says so)
            bpy.context.view_layer.objects.active = theirs.armature
            bpy.ops.import_scene.smd(filepath=str(out / relative), boneMode="NONE", rotMode=ROT_MODE)
            theirs.animations.update(bst_oracle._bst_animations(theirs.armature, set(bpy.data.actions)))
        theirs.animations[stem]()
        frames = bst_oracle.bst_frames(theirs.armature)
        their_poses = bst_oracle.pose_matrices(theirs.armature, frames)
        if goldsrc:
            their_poses = engine_in_place(their_poses, gs, gs.sequences[paired[stem][1]])
        our_poses = evaluate_ours(bpy, armature, by_stem[stem], len(frames))
        our_poses = unturned(our_poses, their_poses)
        if goldsrc:
            our_poses = with_linear_motion(our_poses, their_poses, roots, size)
        try:
            bst_oracle.compare_poses(our_poses, their_poses, size, relative)
            compared += 1
        except AssertionError as exc:
            problems.append(str(exc))
    assert not problems, (
        f"{compared} animations equal, but: "
        + "; ".join(problems[:6])
        + (f" ({len(problems)} differences)" if len(problems) > 6 else "")
    )


@pytest.mark.parametrize("path", known(QC_IMPORT_KNOWN))
def test_blender_source_tools_qc_import_reads_every_file(path, tmp_path, blender):
    """What a user gets from *File › Import › Source Engine* on our QC: every mesh and animation it names."""
    bst_oracle.enable_bst(bst_oracle.require_bst())
    out = tmp_path / path.stem
    result = decompile(str(path), str(out))
    statements = qc_grammar.parse((out / result.qc).read_bytes(), result.qc, strict=False)
    references, animation_files, _ = named_files(statements, out)
    theirs = bst_oracle.import_qc(out / result.qc)
    stems = {Path(r.replace("\\", "/")).stem.lower() for r in references}
    missing = sorted(stems - {m.lower() for m in theirs.meshes})
    skipped = [a for a in animation_files if Path(a.replace("\\", "/")).stem not in theirs.animations]
    # Blender Source Tools imports one file per $sequence: a blend's further files (GoldSrc names them all on the
    # line; no layout makes it read them) are its limitation, not ours; they are compared from their SMDs directly.
    later = set()
    for statement in statements:
        if statement.command == "$sequence":
            _, named, _ = named_files([statement], out)
            later.update(named[1:])
    skipped = [a for a in skipped if a not in later]
    assert not missing and not skipped, (
        f"Blender Source Tools' QC import built no mesh for {missing[:5]} and skipped {len(skipped)} of "
        f"{len(animation_files)} animation files ({skipped[:3]}): it reads a $sequence's file only from the "
        "$sequence line itself"
    )
