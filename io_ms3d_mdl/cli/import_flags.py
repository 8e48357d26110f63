"""Every option of the two File › Import operators as a command-line flag, turned into the scene layer's option
dataclasses exactly as the operators turn their properties into them. No ``bpy``: ``convert`` and ``batch`` share
these, and worker processes receive them as JSON."""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..scene.axes import AXES
from ..scene.ms3d.convert import Ms3dOptions
from ..scene.source.convert import INCH, SourceOptions

UNIT_SCALES = {"inches": INCH, "hammer": 0.01905, "source": 1.0}  # the Source operator's Units, lower-cased
ANIMATIONS = ("all", "own", "default", "none")  # the Source operator's Build choices, lower-cased
TEXTURES = ("pack", "png")

# Each operator property and the flag that sets it; tests check that both operators have no property missing here.
OPERATOR_FLAGS: dict[str, dict[str, str]] = {
    "import_scene.ms3d": {
        "scale": "--scale",
        "axis_forward": "--axis-forward",
        "axis_up": "--axis-up",
        "split_groups": "--objects",
        "use_normals": "--normals",
        "use_smoothing_groups": "--smoothing-groups",
        "import_animation": "--animations",
        "bone_tails": "--bone-tails",
        "find_textures": "--find-textures",
        "work_limit": "--work-limit",
    },
    "import_scene.source_mdl": {
        "units": "--units",
        "scale": "--scale",
        "lod": "--lod",
        "all_lods": "--all-lods",
        "bone_orientation": "--bone-orientation",
        "armature_for_static_props": "--armature-for-static-props",
        "import_attachments": "--attachments",
        "import_hitboxes": "--hitboxes",
        "import_physics": "--physics",
        "import_animations": "--animation-list",
        "animations": "--animations",
        "axis_forward": "--source-axis-forward",
        "axis_up": "--source-axis-up",
        "find_materials": "--materials",
        "texture_output": "--textures",
        "work_limit": "--work-limit",
    },
}


@dataclass(frozen=True)
class ImportChoices:
    """What every file is imported with, and what the outputs keep."""

    ms3d: Ms3dOptions = field(default_factory=Ms3dOptions)
    source: SourceOptions = field(default_factory=SourceOptions)
    textures: str = "pack"  # "png": decoded Source textures as PNG files in a textures/ folder beside each .blend
    animations: str = "all"  # which become actions (ANIMATIONS); "none" also leaves them out of .glb files

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ImportChoices:
        ms3d, source = dict(data["ms3d"]), dict(data["source"])
        for options in (ms3d, source):
            options["search_roots"], options["mounts"] = tuple(options["search_roots"]), tuple(options["mounts"])
        return cls(Ms3dOptions(**ms3d), SourceOptions(**source), data["textures"], data["animations"])


def add_import_flags(parser: argparse.ArgumentParser) -> None:
    both = parser.add_argument_group("import options (both formats)")
    both.add_argument(
        "--scale",
        type=float,
        metavar="FACTOR",
        help="multiply every coordinate by this (MilkShape default 1); Source models too, as custom units, unless "
        "--units is given",
    )
    both.add_argument(
        "--animations",
        choices=ANIMATIONS,
        default="all",
        help="which animations become actions: all (default; Source: with those of included models), own (the "
        "model's own), default (only the default sequence: a .glb of a Source character in a second rather than "
        "minutes) or none (MilkShape: no animation)",
    )
    both.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="a game or mod folder imports may also read materials and textures from (repeatable); nothing outside "
        "these, a model's own folder and its game folder is ever opened",
    )
    both.add_argument(
        "--vpk",
        action="append",
        default=[],
        metavar="ARCHIVE",
        help="mount a VPK (x_dir.vpk, or x.vpk meaning it) or GMA archive (repeatable): models named after it are "
        "paths inside it, and imports find materials, textures and included models in it",
    )
    both.add_argument(
        "--game",
        action="append",
        default=[],
        metavar="DIR",
        help="mount a game folder (holding gameinfo.txt) with its search paths, as the engine does (repeatable): "
        "models may be named inside it, and imports find their materials in it",
    )
    both.add_argument(
        "--work-limit",
        type=float,
        default=1.0,
        metavar="FACTOR",
        help="multiply every work budget (file size, decoded frames, vertices, pixels); raise it only for files you "
        "trust (0.01–1000, default 1)",
    )
    ms3d = parser.add_argument_group("MilkShape 3D (.ms3d) options")
    ms3d.add_argument(
        "--axis-forward",
        choices=AXES,
        default="Z",
        metavar="AXIS",
        help="the file's axis that becomes Blender's forward: X, Y, Z, -X, -Y or -Z (default Z; write a negative "
        "axis as --axis-forward=-Z)",
    )
    ms3d.add_argument("--axis-up", choices=AXES, default="Y", metavar="AXIS", help="the file's up axis (default Y)")
    ms3d.add_argument(
        "--objects",
        choices=("groups", "single"),
        default="groups",
        help="one object per group (default), or a single object with a material slot per material",
    )
    add_switch(ms3d, "--normals", True, "use the stored normals (default on)")
    add_switch(ms3d, "--smoothing-groups", True, "mark edges between smoothing groups sharp (default on)")
    add_switch(
        ms3d, "--find-textures", True, "look for textures beside the model and in a Textures folder (default on)"
    )
    ms3d.add_argument(
        "--bone-tails",
        choices=("child", "axis"),
        default="child",
        help="bones point at their children (default) or along each joint's X axis; deformation is the same",
    )
    ms3d.add_argument(
        "--absolute-texture-paths",
        action="store_true",
        help="follow absolute texture paths in the file (only for your own files; the add-on's preference)",
    )
    source = parser.add_argument_group("Source (.mdl) options")
    source.add_argument(
        "--source-axis-forward",
        choices=AXES,
        default="Y",
        metavar="AXIS",
        help="the model's axis that becomes Blender's forward (default Y, Source's own; -X turns a character's face "
        "to Blender's Front view; write a negative axis as --source-axis-forward=-X)",
    )
    source.add_argument(
        "--source-axis-up", choices=AXES, default="Z", metavar="AXIS", help="the model's up axis (default Z)"
    )
    source.add_argument(
        "--units",
        choices=tuple(UNIT_SCALES),
        help="inches: 0.0254 m per unit (default); hammer: 0.01905 m; source: unscaled",
    )
    source.add_argument("--lod", type=int, default=0, help="level of detail, 0 (most detailed, default) to 7")
    source.add_argument("--all-lods", action="store_true", help="every LOD, the lower ones in hidden collections")
    source.add_argument(
        "--bone-orientation",
        choices=("child", "source"),
        default="child",
        help="bones point at their children (default), or keep Source's axes (for round trips)",
    )
    source.add_argument(
        "--armature-for-static-props", action="store_true", help="give single-bone models an armature too"
    )
    add_switch(source, "--attachments", True, "attachments as empties (default on)")
    add_switch(source, "--hitboxes", False, "hitboxes as empties (default off)")
    add_switch(
        source, "--physics", True, "the .phy collision solids as wireframe meshes in a hidden collection (default on)"
    )
    add_switch(
        source,
        "--animation-list",
        True,
        "list every animation on offer (own, .ani, included models) in the Source panel, where a click builds "
        "one (default on); off: no animation at all",
    )
    add_switch(
        source,
        "--materials",
        True,
        "build materials from the game's VMT and VTF files (default on); off: a plain material per texture",
    )
    source.add_argument(
        "--textures",
        choices=TEXTURES,
        default="pack",
        help="decoded textures packed into the .blend (default), or PNG files in textures/ beside it",
    )


def add_switch(group: argparse._ArgumentGroup, flag: str, default: bool, help: str) -> None:
    """An option that is on or off: ``--flag`` and ``--no-flag``, as the operator's checkbox."""
    group.add_argument(flag, action=argparse.BooleanOptionalAction, default=default, help=help)


def choices_from(args: argparse.Namespace) -> ImportChoices:
    """The options the flags ask for; ValueError names a flag whose value no operator would accept."""
    check_range("--work-limit", args.work_limit, 0.01, 1000.0)
    if args.scale is not None:
        check_range("--scale", args.scale, 1e-6, 1e6)
    if not 0 <= args.lod <= 7:
        raise ValueError(f"--lod must be 0 to 7, not {args.lod}")
    check_axes("--source-axis-forward", args.source_axis_forward, "--source-axis-up", args.source_axis_up)
    check_axes("--axis-forward", args.axis_forward, "--axis-up", args.axis_up)
    roots = tuple(str(Path(root).resolve()) for root in args.root)
    mounted = mounted_from(args)
    ms3d = Ms3dOptions(
        scale=1.0 if args.scale is None else args.scale,
        axis_forward=args.axis_forward,
        axis_up=args.axis_up,
        split_groups=args.objects == "groups",
        use_normals=args.normals,
        use_smoothing_groups=args.smoothing_groups,
        find_textures=args.find_textures,
        import_animation=args.animations != "none",
        bone_tails=args.bone_tails.upper(),
        search_roots=roots,
        mounts=mounted,
        allow_absolute_paths=args.absolute_texture_paths,
        work_limit=args.work_limit,
    )
    source = SourceOptions(
        scale=source_scale(args.units, args.scale),
        lod=-1 if args.all_lods else args.lod,
        bone_orientation=args.bone_orientation.upper(),
        import_attachments=args.attachments,
        import_hitboxes=args.hitboxes,
        import_physics=args.physics,
        armature_for_static_props=args.armature_for_static_props,
        import_animations=args.animation_list,
        animations=args.animations.upper(),
        find_materials=args.materials,
        search_roots=roots,
        mounts=mounted,
        work_limit=args.work_limit,
        axis_forward=args.source_axis_forward,
        axis_up=args.source_axis_up,
    )
    return ImportChoices(ms3d, source, args.textures, args.animations)


def mounted_from(args: argparse.Namespace) -> tuple[str, ...]:
    """``--vpk`` archives, then ``--game`` folders, as absolute paths in the order given."""
    return tuple(os.path.abspath(p) for p in [*getattr(args, "vpk", []), *getattr(args, "game", [])])


def source_scale(units: str | None, scale: float | None) -> float:
    """Named units win; a bare --scale is the operator's Custom units; neither is inches."""
    if units is not None:
        return UNIT_SCALES[units]
    return INCH if scale is None else scale


def check_range(flag: str, value: float, low: float, high: float) -> None:
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(f"{flag} must be between {low:g} and {high:g}, not {value:g}")


def check_axes(forward_flag: str, forward: str, up_flag: str, up: str) -> None:
    """Forward and up must be different axes (either sign), as the operators' orientation helper insists."""
    if forward[-1] == up[-1]:
        raise ValueError(f"{forward_flag} {forward} and {up_flag} {up} must be different axes")
