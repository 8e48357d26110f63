"""The QC of a Source model: what studiomdl needs to compile the written SMD/VTA files back into the same model.

Commands follow the order a hand-written QC keeps (model, materials, body, skeleton extras, physics,
animation), names exactly as stored (quoted by ``formats.qc`` when needed). Angles in QC commands are degrees."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ...errors import Warnings
from ...formats.qc import QcWriter, Quoted, Raw
from ...formats.source.model import MdlFile, VtxFile
from ...formats.source.phy import PhyFile
from ...scene.rotations import compose, quaternion_to_matrix
from .angles import matrix_to_euler, quaternion_to_euler
from .details import ModelDetails
from .geometry import STATIC_TURN

STUDIO_LOOPING, STUDIO_SNAP, STUDIO_DELTA, STUDIO_AUTOPLAY, STUDIO_POST = 0x1, 0x2, 0x4, 0x8, 0x10
STUDIO_CYCLEPOSE, STUDIO_REALTIME, STUDIO_LOCAL, STUDIO_HIDDEN = 0x80, 0x100, 0x200, 0x400
STUDIO_WORLD = 0x4000
BONE_USED_BY_BONE_MERGE = 0x40000
NEW_EVENT = 0x400  # the event's name is a string (AE_...), its number assigned at run time
CONTENTS = ((0x1, "solid"), (0x8, "grate"), (0x2000000, "monster"), (0x20000000, "ladder"))
AUTOLAYER_FLAGS = ((0x1, "post"), (0x2, "spline"), (0x4, "xfade"), (0x8, "noblend"), (0x20, "local"))


@dataclass
class QcParts:
    mdl: MdlFile
    details: ModelDetails
    stem: str
    turn: np.ndarray | None
    vtx: VtxFile | None
    references: dict[tuple[int, int, int], str] = field(default_factory=dict)  # (body part, option, lod) → file
    flexes: dict = field(default_factory=dict)  # (body part, option) → flexes.FlexPart
    physics: str | None = None
    phy: PhyFile | None = None
    solids: list = field(default_factory=list)  # the scene's collision objects (their props hold the text keys)
    animations: dict = field(default_factory=dict)  # (source, index) → animations.WrittenAnimation
    weightlists: dict[int, str] = field(default_factory=dict)  # sequence → its $weightlist name
    definebone: bool = False
    options: list[list[str]] | None = None  # an export's body-part options (more than the file's: added)
    renamed: dict[str, str] = field(default_factory=dict)  # an export's material names, by the file's texture
    new_sequences: list = field(default_factory=list)  # an export's actions made in Blender (WrittenAnimation)


def _turned(parts: QcParts, v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v @ parts.turn.T if parts.turn is not None else v


def write_qc(qc: QcWriter, parts: QcParts, warnings: Warnings) -> None:
    mdl, details = parts.mdl, parts.details
    qc.comment(f"Decompiled by io_ms3d_mdl from {parts.stem}.mdl (version {mdl.version})")
    qc.command("$modelname", Quoted(mdl.name))
    qc.blank()
    _body(qc, parts, warnings)
    _lods(qc, parts)
    _mouths(qc, parts)
    qc.blank()
    if mdl.is_static_prop:
        qc.command("$staticprop")
    if details.surface_prop:
        qc.command("$surfaceprop", Quoted(details.surface_prop))
    names = [n for bit, n in CONTENTS if details.contents & bit]
    qc.command("$contents", *(Quoted(n) for n in (names or ["notsolid"])))
    # studiomdl turns $illumposition and $eyeposition a quarter (x' = -y, y' = x) for every model: turned back
    qc.command("$illumposition", *(details.illum_position.astype(np.float64) @ STATIC_TURN.T).tolist())
    if np.any(details.eye_position):  # turned by studiomdl as $illumposition is
        qc.command("$eyeposition", *(details.eye_position.astype(np.float64) @ STATIC_TURN.T).tolist())
    if np.any(details.hull[0]) or np.any(details.hull[1]):
        qc.command("$bbox", *details.hull[0].astype(float).tolist(), *details.hull[1].astype(float).tolist())
    qc.command("$cbox", *details.view[0].astype(float).tolist(), *details.view[1].astype(float).tolist())
    for folder in mdl.cd_materials:
        qc.command("$cdmaterials", Quoted(folder))
    _skins(qc, mdl, parts.renamed)
    for name in mdl.include_models:
        qc.command("$includemodel", Quoted(name))
    _keyvalues(qc, details.keyvalues, warnings)
    qc.blank()
    _bones(qc, parts)
    _jiggles(qc, parts)
    _ik_chains(qc, parts)
    _attachments(qc, parts)
    _hitboxes(qc, mdl, parts.turn)
    _collision(qc, parts)
    qc.blank()
    parts.weightlists = _weightlists(qc, parts)
    for p in details.pose_parameters:
        extra = ["loop", p.loop] if p.loop else []
        qc.command("$poseparameter", p.name, p.start, p.end, *extra)
    _sequences(qc, parts, warnings)
    for w in parts.new_sequences:
        with qc.block("$sequence", Quoted(w.name)):
            qc.line(Quoted(w.file))
            qc.line("fps", w.fps)


def _body(qc: QcWriter, parts: QcParts, warnings: Warnings) -> None:
    mdl = parts.mdl
    for b, bp in enumerate(mdl.body_parts):
        flexed = [m for m in range(len(bp.models)) if (b, m) in parts.flexes]
        extra = parts.options[b] if parts.options is not None and b < len(parts.options) else []
        count = max(len(bp.models), len(extra))
        if flexed and count == 1:
            _flex_model(qc, parts, b, bp.name)
            continue
        if flexed:
            warnings.add(f"body part '{bp.name}' has several options and flexes: its flexes are not in the QC")
        with qc.block("$bodygroup", Quoted(bp.name)):
            for m in range(count):
                file = parts.references.get((b, m, 0))
                if file is None:
                    qc.line("blank")
                else:
                    qc.line("studio", Quoted(file))


def _flex_model(qc: QcWriter, parts: QcParts, b: int, name: str) -> None:
    mdl = parts.mdl
    flex = parts.flexes[(b, 0)]
    with qc.block("$model", Quoted(name), Quoted(parts.references[(b, 0, 0)])):
        _eyeballs(qc, parts, b)
        with qc.block("flexfile", Quoted(flex.vta)):
            qc.line("defaultflex", "frame", 0)
            for i, n in enumerate(flex.names, start=1):
                qc.line("flex", Quoted(n), "frame", i)
        for cname, kind, lo, hi in mdl.flex_controllers:
            qc.line("flexcontroller", kind or "default", "range", lo, hi, Quoted(cname))
        from .rules import rule_lines

        for line in rule_lines(mdl):
            qc.lines.append("\t" * qc.depth + line)


def bone_world(mdl: MdlFile) -> np.ndarray:
    """Each bone's rest pose in model space (parents before children)."""
    quat = mdl.bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]]
    local = compose(quaternion_to_matrix(quat), mdl.bones["pos"].astype(np.float64))
    world = local.copy()
    for i, parent in enumerate(mdl.bones["parent"].tolist()):
        if parent >= 0:
            world[i] = world[parent] @ local[i]
    return world


def _eyeballs(qc: QcWriter, parts: QcParts, b: int) -> None:
    """``eyeball name bone x y z material diameter angle iris_material iris_scale``: the centre in model space,
    the angle from the stored tangent (studiomdl stores ``tan(angle)``), the iris scale inverted as it stores it."""
    mdl = parts.mdl
    world = bone_world(mdl) if len(mdl.bones) else np.zeros((0, 4, 4))
    family0 = mdl.skins[0].tolist() if len(mdl.skins) else []
    for k, (name, r) in enumerate(parts.details.eyeballs.get((b, 0), [])):
        bone = int(r["bone"])
        if not 0 <= bone < len(world):
            continue
        centre = world[bone] @ np.r_[r["org"].astype(np.float64), 1.0]
        # the material: of the eyeball's own mesh (material type 1, parameter = the eyeball), else the stored one
        model = mdl.body_parts[b].models[0]
        meshes = [m.material for m in model.meshes if m.material_type == 1 and m.material_param == k]
        ref = meshes[0] if meshes else int(r["texture"])
        texture = family0[ref] if 0 <= ref < len(family0) else ref
        material = mdl.textures[texture] if 0 <= texture < len(mdl.textures) else "eyeball"
        angle = float(np.degrees(np.arctan(float(r["zoffset"]))))
        iris = float(r["iris_scale"])
        qc.line(
            "eyeball", Quoted(name or f"eye{k}"), Quoted(mdl.bone_names[bone]), *centre[:3].tolist(), Quoted(material),
            float(r["radius"]) * 2.0, angle, Quoted("iris_unused"), 1.0 / iris if iris else 1.0,
        )  # fmt: skip


def _mouths(qc: QcWriter, parts: QcParts) -> None:
    mdl = parts.mdl
    for k, (bone, forward, flex) in enumerate(parts.details.mouths):
        if 0 <= bone < len(mdl.bone_names) and 0 <= flex < len(mdl.flex_names):
            qc.command("$mouth", k, Quoted(mdl.flex_names[flex]), Quoted(mdl.bone_names[bone]), *forward.tolist())


def _lods(qc: QcWriter, parts: QcParts) -> None:
    vtx = parts.vtx
    if vtx is None:
        return
    lods = max((k for _, _, k in parts.references), default=0)
    for k in range(1, lods + 1):
        switch = 0.0
        for options in vtx.body_parts:
            for levels in options:
                if levels and k < len(levels) and levels[k] is not None:
                    switch = max(switch, float(levels[k].switch_point))
        with qc.block("$lod", switch):
            for (b, m, level), file in sorted(parts.references.items()):
                if level != 0:
                    continue
                lower = parts.references.get((b, m, k))
                if lower is not None:
                    qc.line("replacemodel", Quoted(file), Quoted(lower))
                else:
                    qc.line("removemodel", Quoted(file))


def _skins(qc: QcWriter, mdl: MdlFile, renamed: dict[str, str]) -> None:
    skins = np.asarray(mdl.skins)
    if skins.ndim != 2 or len(skins) < 2:
        return
    columns = [c for c in range(skins.shape[1]) if (skins[:, c] != skins[0, c]).any()]
    if not columns:
        return

    def name(t: int) -> str:
        texture = mdl.textures[t] if 0 <= t < len(mdl.textures) else f"material{t}"
        return renamed.get(texture, texture)

    with qc.block("$texturegroup", "skinfamilies"):
        for row in skins.tolist():
            qc.line("{", *(Quoted(name(row[c])) for c in columns), Raw("}"))


def _bones(qc: QcWriter, parts: QcParts) -> None:
    mdl = parts.mdl
    bones = mdl.bones
    if parts.definebone:
        angles = np.degrees(quaternion_to_euler(bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]]))
        for i, name in enumerate(mdl.bone_names):
            parent = int(bones["parent"][i])
            qc.command(
                "$definebone",
                Quoted(name),
                Quoted(mdl.bone_names[parent] if parent >= 0 else ""),
                *bones["pos"][i].astype(float).tolist(),
                *angles[i].tolist(),
                0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            )  # fmt: skip
    for i, name in enumerate(mdl.bone_names):
        if int(bones["flags"][i]) & BONE_USED_BY_BONE_MERGE:
            qc.command("$bonemerge", Quoted(name))
    # a bone's own surface property and contents, where they differ from the model's
    model_prop, model_contents = parts.details.surface_prop, parts.details.contents
    for i, prop in enumerate(parts.details.bone_surface_props):
        if prop and prop != model_prop:
            qc.command("$jointsurfaceprop", Quoted(mdl.bone_names[i]), Quoted(prop))
        contents = int(bones["contents"][i])
        if contents != model_contents:
            words = [n for bit, n in CONTENTS if contents & bit] or ["notsolid"]
            qc.command("$jointcontents", Quoted(mdl.bone_names[i]), *(Quoted(w) for w in words))


def _attachments(qc: QcWriter, parts: QcParts) -> None:
    mdl = parts.mdl
    for att in mdl.attachments:
        matrix = np.asarray(att.matrix, dtype=np.float64)
        rotation, position = matrix[:3, :3], matrix[:, 3]
        if parts.turn is not None:
            rotation, position = parts.turn @ rotation, parts.turn @ position
        # studiomdl reads "rotate" as a QAngle: pitch (about y), yaw (about z), roll (about x), in degrees
        x, y, z = np.degrees(matrix_to_euler(rotation)).tolist()
        angles = np.array([y, z, x])
        bone = mdl.bone_names[att.bone] if 0 <= att.bone < len(mdl.bone_names) else mdl.bone_names[0]
        extra = ["world_align"] if att.flags & 0x10000 else []
        qc.command(
            "$attachment", Quoted(att.name), Quoted(bone), *position.tolist(), "rotate", *angles.tolist(), *extra
        )


def _hitboxes(qc: QcWriter, mdl: MdlFile, turn: np.ndarray | None) -> None:
    for set_name, boxes in mdl.hitbox_sets.items():
        qc.command("$hboxset", Quoted(set_name))
        for box in boxes:
            if not 0 <= box.bone < len(mdl.bone_names):
                continue
            low, high = box.bbmin.astype(np.float64), box.bbmax.astype(np.float64)
            if turn is not None:  # a quarter turn keeps a box a box
                ends = np.stack([low, high]) @ turn.T
                low, high = ends.min(axis=0), ends.max(axis=0)
            name = [Quoted(box.name)] if box.name else []
            qc.command("$hbox", box.group, Quoted(mdl.bone_names[box.bone]), *low.tolist(), *high.tolist(), *name)


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) else None


def _collision(qc: QcWriter, parts: QcParts) -> None:
    if parts.physics is None or parts.phy is None:
        return
    phy = parts.phy
    edit = phy.block("editparams")
    first = parts.solids[0].props if parts.solids else {}
    joints = len(parts.solids) > 1
    total = _number(edit.get("totalmass"))
    if total is None:
        total = sum(_number(o.props.get("source_phy_mass")) or 0.0 for o in parts.solids)
    with qc.block("$collisionjoints" if joints else "$collisionmodel", Quoted(parts.physics)):
        qc.line("$mass", float(total))
        for key, command in (("inertia", "$inertia"), ("damping", "$damping"), ("rotdamping", "$rotdamping")):
            value = _number(first.get(f"source_phy_{key}"))
            if value is not None:
                qc.line(command, value)
        root = edit.get("rootname")
        if isinstance(root, str) and root:
            qc.line("$rootbone", Quoted(root))
        if any(o.props.get("source_phy_pieces", 1) > 1 for o in parts.solids) or str(edit.get("concave", "")) == "1":
            qc.line("$concave")
        if joints:
            for obj in parts.solids:
                bone = obj.props.get("source_phy_name") or obj.bone
                for axis in "xyz":
                    lo = obj.props.get(f"source_constraint_{axis}min")
                    hi = obj.props.get(f"source_constraint_{axis}max")
                    if lo is None or hi is None:
                        continue
                    friction = obj.props.get(f"source_constraint_{axis}friction", 0.0)
                    qc.line("$jointconstrain", Quoted(str(bone)), axis, "limit", float(lo), float(hi), float(friction))
                mass = _number(obj.props.get("source_phy_mass"))
                if mass is not None and total:
                    qc.comment(f"{bone}: mass {mass}")


def _sequences(qc: QcWriter, parts: QcParts, warnings: Warnings) -> None:
    mdl, details = parts.mdl, parts.details
    written = parts.animations
    for i, seq in enumerate(mdl.sequences):
        files = []
        for a in seq.animations:
            w = written.get((0, a))
            if w is None:
                break
            files.append(w)
        if not files:
            if seq.animations:
                warnings.add(f"sequence '{seq.name}': its animation was not written; left out of the QC")
            continue
        d = details.sequences[i] if i < len(details.sequences) else None
        first = files[0]
        with qc.block("$sequence", Quoted(seq.name)):
            for w in files:
                qc.line(Quoted(w.file))
            if d is not None and d.groupsize[0] * d.groupsize[1] > 1:
                qc.line("blendwidth", d.groupsize[0])
                for axis in (0, 1):
                    p = d.params[axis]
                    if 0 <= p < len(details.pose_parameters):
                        qc.line(
                            "blend", Quoted(details.pose_parameters[p].name), d.param_start[axis], d.param_end[axis]
                        )
            qc.line("fps", first.fps)
            flags = seq.flags
            for bit, word in (
                (STUDIO_LOOPING, "loop"),
                (STUDIO_SNAP, "snap"),
                (STUDIO_DELTA, "delta"),
                (STUDIO_AUTOPLAY, "autoplay"),
                (STUDIO_REALTIME, "realtime"),
                (STUDIO_HIDDEN, "hidden"),
                (STUDIO_WORLD, "worldspace"),
            ):
                if flags & bit:
                    qc.line(word)
            if seq.activity:
                qc.line("activity", Quoted(seq.activity), d.actweight if d else 1)
            if i in parts.weightlists:
                qc.line("weightlist", Quoted(parts.weightlists[i]))
            if d is not None:
                if abs(d.fadein - 0.2) > 1e-6:
                    qc.line("fadein", d.fadein)
                if abs(d.fadeout - 0.2) > 1e-6:
                    qc.line("fadeout", d.fadeout)
                _nodes(qc, details.nodes, d)
                for layer in d.layers:
                    _layer(qc, mdl, layer, max(first.frames - 1, 0))
            last = max(first.frames - 1, 0)
            raw = d.events if d is not None and len(d.events) == len(seq.events) else []
            for k, e in enumerate(seq.events):
                frame = round(min(max(e.cycle, 0.0), 1.0) * last)
                number, kind, options = raw[k] if raw else (e.event, 0, e.name)
                if kind & NEW_EVENT or (not raw and e.event == 0 and e.name):  # a named event: name, then options
                    extra = [Quoted(options)] if raw and options else []
                    qc.line("{", "event", Quoted(e.name), frame, *extra, Raw("}"))
                else:
                    qc.line("{", "event", number, frame, Quoted(options), Raw("}"))


def _nodes(qc: QcWriter, nodes: list[str], d) -> None:
    def name(n: int) -> str | None:
        return nodes[n - 1] if 0 < n <= len(nodes) else None

    entry, exit_ = name(d.entry_node), name(d.exit_node)
    if entry is None:
        return
    if exit_ is None or exit_ == entry:
        qc.line("node", Quoted(entry))
    elif d.node_flags & 1:
        qc.line("rtransition", Quoted(entry), Quoted(exit_))
    else:
        qc.line("transition", Quoted(entry), Quoted(exit_))


def _layer(qc: QcWriter, mdl: MdlFile, layer, last: int) -> None:
    """``blendlayer`` takes frames of this sequence; the model stores them as cycles (frame / last frame)."""
    seq, _pose, flags, start, peak, tail, end = layer
    if not 0 <= seq < len(mdl.sequences):
        return
    name = Quoted(mdl.sequences[seq].name)
    if flags & 0x10 or (start, peak, tail, end) == (0.0, 0.0, 0.0, 0.0):  # a plain layer
        qc.line("addlayer", name)
        return
    words = [w for bit, w in AUTOLAYER_FLAGS if flags & bit]
    frames = [round(v * last) for v in (start, peak, tail, end)]
    qc.line("blendlayer", name, *frames, *words)


def _weightlists(qc: QcWriter, parts: QcParts) -> dict[int, str]:
    """A ``$weightlist`` per distinct set of sequence bone weights that is not all ones (the default)."""
    names: dict[bytes, str] = {}
    out: dict[int, str] = {}
    bones = parts.mdl.bone_names
    for i, d in enumerate(parts.details.sequences):
        w = d.weights
        if w is None or len(w) != len(bones) or (w == 1).all():
            continue
        key = w.tobytes()
        if key not in names:
            names[key] = f"weights{len(names)}"
            with qc.block("$weightlist", Quoted(names[key])):
                for bone, weight in zip(bones, w.tolist(), strict=True):
                    qc.line(Quoted(bone), float(weight))
        out[i] = names[key]
    return out


def _ik_chains(qc: QcWriter, parts: QcParts) -> None:
    names = parts.mdl.bone_names
    for chain in parts.details.ik_chains:
        if not chain.bones or not 0 <= chain.bones[-1] < len(names):
            continue
        knee = ["knee", *chain.knee.tolist()] if np.any(chain.knee) else []
        qc.command("$ikchain", Quoted(chain.name), Quoted(names[chain.bones[-1]]), *knee)


JIGGLE_FLEXIBLE, JIGGLE_RIGID, JIGGLE_YAW, JIGGLE_PITCH, JIGGLE_ANGLE = 0x1, 0x2, 0x4, 0x8, 0x10
JIGGLE_LENGTH, JIGGLE_BASE = 0x20, 0x40


def _jiggles(qc: QcWriter, parts: QcParts) -> None:
    """``$jigglebone`` blocks from the bones' jiggle records (angles stored in radians, written in degrees)."""
    names = parts.mdl.bone_names
    for bone, r in sorted(parts.details.jiggles.items()):
        flags = int(r["flags"])

        def f(name: str, r: np.void = r) -> float:
            return float(r[name])

        with qc.block("$jigglebone", Quoted(names[bone])):
            for flag, word in ((JIGGLE_FLEXIBLE, "is_flexible"), (JIGGLE_RIGID, "is_rigid")):
                if not flags & flag:
                    continue
                with qc.block(word):
                    qc.line("length", f("length"))
                    qc.line("tip_mass", f("tip_mass"))
                    if flag == JIGGLE_FLEXIBLE:
                        for key in ("pitch_stiffness", "pitch_damping", "yaw_stiffness", "yaw_damping"):
                            qc.line(key, f(key))
                        if flags & JIGGLE_LENGTH:
                            qc.line("along_stiffness", f("along_stiffness"))
                            qc.line("along_damping", f("along_damping"))
                        else:
                            qc.line("allow_length_flex")
                    if flags & JIGGLE_ANGLE:
                        qc.line("angle_constraint", float(np.degrees(f("angle_limit"))))
                    if flags & JIGGLE_YAW:
                        qc.line("yaw_constraint", float(np.degrees(f("min_yaw"))), float(np.degrees(f("max_yaw"))))
                        qc.line("yaw_friction", f("yaw_friction"))
                    if flags & JIGGLE_PITCH:
                        low, high = float(np.degrees(f("min_pitch"))), float(np.degrees(f("max_pitch")))
                        qc.line("pitch_constraint", low, high)
                        qc.line("pitch_friction", f("pitch_friction"))
            if flags & JIGGLE_BASE:
                with qc.block("has_base_spring"):
                    for key in ("base_mass", "base_stiffness", "base_damping"):
                        qc.line(key.removeprefix("base_") if key != "base_mass" else "base_mass", f(key))
                    for axis in ("left", "up", "forward"):
                        qc.line(f"{axis}_constraint", f(f"base_min_{axis}"), f(f"base_max_{axis}"))
                        qc.line(f"{axis}_friction", f(f"base_{axis}_friction"))


_KV_TOKEN = re.compile(r'"([^"]*)"|([{}])|([^\s{}"]+)')


def _keyvalues(qc: QcWriter, text: str, warnings: Warnings) -> None:
    """``$keyvalues { ... }``: the model's key values (``mdlkeyvalue { ... }``) re-tokenised, every word quoted and
    every brace on its own, so text from the file can never break the QC's structure."""
    if not text.strip():
        return
    tokens = [(q if q or not (b or w) else None, b, w) for q, b, w in _KV_TOKEN.findall(text)]
    depth, body, started = 0, [], False
    for quoted, brace, bare in tokens:
        if brace == "{":
            depth += 1
            if depth == 1:
                started = True
                continue
        elif brace == "}":
            depth -= 1
            if depth == 0 and started:
                break
            if depth < 0:
                break
        if started:
            body.append(Raw(brace) if brace else Quoted(quoted if quoted is not None else bare))
    if depth != 0 or not started:
        warnings.add("the model's key values are not balanced braces; left out of the QC")
        return
    with qc.block("$keyvalues"):
        line: list = []
        for token in body:
            if isinstance(token, Raw):
                if line:
                    qc.line(*line)
                    line = []
                if token == "}":
                    qc.depth -= 1
                qc.lines.append("\t" * qc.depth + token)
                if token == "{":
                    qc.depth += 1
            else:
                line.append(token)
                if len(line) == 2:
                    qc.line(*line)
                    line = []
        if line:
            qc.line(*line)
