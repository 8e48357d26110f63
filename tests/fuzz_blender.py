"""The whole import under fuzzing, for ``scripts/fuzz.py --blender``: seeds as file trees (a model with everything
it reads, in a game-like folder beside a canary folder), their mutation, and the worker that imports each case in
Blender, through the operators or the batch converter, and checks what the import left behind.

The worker runs as ``python tests/fuzz_blender.py --worker LOG`` with the bpy wheel: one JSON case a line on stdin,
one ``RESULT`` JSON line on stdout per case. Everything else the process prints goes to LOG, read back per case, so
a traceback our code printed is seen even when the import "succeeded".
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import stat
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

CANARY = "outside"  # the canary folder, beside the model's game (or model) folder in every case
FORMATS = {
    **{s: "mdl" for s in (".mdl", ".vvd", ".vtx", ".ani", ".phy", ".vvc")},
    **{".ms3d": "ms3d", ".vmt": "vmt", ".vtf": "vtf", ".pcx": "pcx"},
    **{".vpk": "archive", ".gma": "archive"},
}
TRAVERSALS = ("../outside/secret", "..\\..\\outside\\secret", "../../../outside/secret.vmt", "/etc/passwd", "C:/x.png")


# --- seeds as file trees -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """A symlink in a tree: to ``target`` below the case root when ``inside``, else to that absolute path."""

    target: str
    inside: bool


@dataclass(frozen=True)
class Fifo:
    """A named pipe in a tree (a sidecar that blocks whoever opens it)."""


Entry = bytes | Link | Fifo
Files = dict[str, Entry]  # POSIX path below the case root -> what is there


@dataclass
class TreeSeed:
    name: str
    model: str  # the file imported, below the case root
    files: Files
    canaries: tuple[str, ...] = ()  # canary folders outside the case that the files name by absolute path

    @property
    def mutable(self) -> list[str]:
        """The files our readers parse; images Blender decodes itself, and the canaries, are carried along."""
        return [
            p
            for p, e in self.files.items()
            if isinstance(e, bytes) and not p.startswith(CANARY + "/") and Path(p).suffix.lower() in FORMATS
        ]


def snapshot(root: Path) -> Files:
    """Every file below ``root`` (links and pipes as such), so a seed can be written again anywhere."""
    files: Files = {}
    for folder, dirs, names in os.walk(root):  # (a link to a folder is listed with the folders, and not walked)
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            relative = path.relative_to(root).as_posix()
            if stat.S_ISLNK(mode):
                target = Path(os.path.join(folder, os.readlink(path)))
                inside = target.is_relative_to(root)
                files[relative] = Link(target.relative_to(root).as_posix() if inside else str(target), inside)
            elif stat.S_ISFIFO(mode):
                files[relative] = Fifo()
            elif stat.S_ISREG(mode):
                files[relative] = path.read_bytes()
    return files


def write_tree(files: Files, root: Path) -> None:
    for relative, entry in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(entry, Link):
            path.symlink_to(root / entry.target if entry.inside else entry.target)
        elif isinstance(entry, Fifo):
            os.mkfifo(path)
        else:
            path.write_bytes(entry)


_records: list[list[str]] = []
_hooked = False


PATH_ONLY = getattr(os, "O_PATH", 0)


def _audit(event: str, args: tuple) -> None:
    """Cheap while nothing records: it runs for every audited event of the process. A path-only descriptor
    (``O_PATH``: how ``access.py`` asks the kernel where a found file leads, on Linux) reads nothing and opens no
    device or FIFO, so it is not a touch; everything else that opens or lists is."""
    watched = _records and event in ("open", "os.listdir", "os.scandir") and args
    if watched and event == "open" and PATH_ONLY and len(args) > 2 and isinstance(args[2], int):
        watched = not args[2] & PATH_ONLY
    if watched and isinstance(args[0], (str, bytes, os.PathLike)):
        _records[-1].append(os.path.abspath(os.fsdecode(args[0])))


@contextmanager
def recording() -> Iterator[list[str]]:
    """The paths this process opens or lists meanwhile (an audit hook: Python's own opens, not Blender's C code)."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    _records.append([])
    try:
        yield _records[-1]
    finally:
        _records.pop()


def canary_files(scratch: Path) -> Files:
    import hostile

    return {f"{CANARY}/{p}": e for p, e in snapshot(hostile.canaries(scratch / "canary-template")).items()}


def built(name: str, build: Callable[[Path], Path], folder: Path) -> TreeSeed:
    """A crafted case built once into its own folder (kept for the run: some name their canary by absolute path)."""
    import hostile

    folder.mkdir(parents=True, exist_ok=True)
    model = build(folder)
    outside = hostile.canaries(folder)
    return TreeSeed(name, model.relative_to(folder).as_posix(), snapshot(folder), (str(outside),))


def hostile_builders() -> dict[str, Callable[[Path], Path]]:
    """The crafted cases of ``tests/hostile.py`` and ``tests/fuzz_seeds.py``; MilkShape ones in ``model/`` so the
    canary lies outside it."""
    import fuzz_seeds
    import hostile

    return {
        "hostile absolute texture.ms3d": lambda t: hostile.ms3d_textured(
            t / "model", str(hostile.canaries(t) / "secret.png"), alphamap="..\\..\\outside\\secret.png"
        ),
        "hostile frame bomb.ms3d": lambda t: hostile.ms3d_frame_bomb(t / "model"),
        "hostile clip bomb.ms3d": lambda t: hostile.ms3d_clip_bomb(t / "model"),
        "hostile infinite timing.ms3d": lambda t: hostile.ms3d_extreme_timing(t / "model", 3e38, (-1e30, 1e30)),
        "hostile long names.ms3d": lambda t: hostile.ms3d_long_names(t / "model"),
        "hostile vmt traversal.mdl": hostile.source_vmt_traversal,
        "hostile cdmaterials traversal.mdl": hostile.source_cdmaterials_traversal,
        "hostile include traversal.mdl": hostile.source_include_traversal,
        "hostile fifo sidecar.mdl": lambda t: hostile.source_special_sidecar(t, "fifo"),
        "hostile device sidecar.mdl": lambda t: hostile.source_special_sidecar(t, "zero"),
        "hostile sidecar linked outside.mdl": lambda t: hostile.source_special_sidecar(t, "outside"),
        "hostile frame bomb.mdl": hostile.source_frame_bomb,
        "hostile event bomb.mdl": hostile.source_event_bomb,
        "hostile shared strip groups.mdl": hostile.source_shared_strip_groups,
        "hostile fixup bomb.mdl": hostile.source_fixup_bomb,
        "hostile huge texture.mdl": hostile.source_huge_texture,
        "hostile extreme floats.mdl": hostile.source_extreme_floats,
        "hostile goldsrc commands overrun.mdl": hostile.goldsrc_commands_overrun,
        "hostile goldsrc missing vertices.mdl": hostile.goldsrc_missing_vertices,
        "hostile goldsrc texture beyond data.mdl": hostile.goldsrc_texture_beyond_data,
        "hostile goldsrc group traversal.mdl": hostile.goldsrc_group_traversal,
        "hostile goldsrc cyclic parents.mdl": hostile.goldsrc_cyclic_parents,
        "hostile goldsrc frame bomb.mdl": hostile.goldsrc_frame_bomb,
        "hostile goldsrc empty spans.mdl": hostile.goldsrc_empty_spans,
        **fuzz_seeds.BUILDERS,
    }


def synthetic_trees(textures: list[bytes]) -> list[TreeSeed]:
    """``tests/fuzzing.py``'s synthetic seeds, the character with the include, VMTs and VTFs it names."""
    import hostile
    from fuzzing import ARCHIVE_FILES, synthetic_seeds
    from source_writer import SAnimation, SNode, character_spec

    seeds = []
    for seed in synthetic_seeds():
        stem = seed.name.removeprefix("synthetic ").rsplit(".", 1)[0]
        if "gameinfo" in seed.parts:  # a game's text among links: its tree seeds are ``fuzz_seeds``' link cases
            continue
        if set(seed.parts) & set(ARCHIVE_FILES):  # an archive: the model imported from its path inside it
            files = {f"game/{ARCHIVE_FILES[key]}": data for key, data in seed.parts.items()}
            main = f"game/{ARCHIVE_FILES['gma' if 'gma' in seed.parts else 'dir']}"
            seeds.append(TreeSeed(seed.name, f"{main}/models/test/model.mdl", files))
            continue
        if "ms3d" in seed.parts:
            seeds.append(TreeSeed(seed.name, f"model/{stem}.ms3d", {f"model/{stem}.ms3d": seed.parts["ms3d"]}))
            continue
        if "g1" in seed.parts:  # GoldSrc: the model, its texture file and its sequence-group file side by side
            names = {"mdl": "guy.mdl", "t": "guyT.mdl", "g1": "guy01.mdl"}
            files = {f"game/models/{names[k]}": v for k, v in seed.parts.items() if k in names}
            seeds.append(TreeSeed(seed.name, "game/models/guy.mdl", files))
            continue
        folder, materials = "game/models/test", "game/materials/models/test"
        turn = SAnimation("turn", 8, [SNode(1, ("q64", (0.7071068, 0.0, 0.0, 0.7071068)))])
        include = hostile.write_mdl(character_spec(includes=[], animations=[turn]))
        textures = textures or [hostile.vtf(8, 8)]
        files: Files = {
            f"{folder}/{stem}{suffix}": seed.parts[kind]
            for kind, suffix in (("mdl", ".mdl"), ("vvd", ".vvd"), ("vtx", ".dx90.vtx"))
            if kind in seed.parts  # a v53 model embeds its companions
        }
        files |= {
            f"{folder}/Test_Animations.mdl": include,
            f"{materials}/body.vmt": b'"VertexLitGeneric"\n{\n"$basetexture" "models/test/body"\n}\n',
            f"{materials}/body_red.vmt": b'patch\n{\ninclude "materials/models/test/body.vmt"\n'
            b'insert { "$color2" "[1 0 0]" "$basetexture" "models/test/red" }\n}\n',
            f"{materials}/hat.vmt": b'"VertexLitGeneric"\n{\n"$basetexture" "models/test/hat"\n"$alphatest" "1"\n}\n',
        }
        for name, data in zip(("body", "red", "hat"), textures * 3, strict=False):
            files[f"{materials}/{name}.vtf"] = data
        seeds.append(TreeSeed(seed.name, f"{folder}/{stem}.mdl", files))
    return seeds


def sample_tree(name: str, path: Path) -> TreeSeed:
    """A sample model with every file one import of it reads (found by importing it once, watched)."""
    import numpy as np

    from io_ms3d_mdl.access import game_root
    from io_ms3d_mdl.scene.load import LOADERS

    path = path.absolute()
    source = path.suffix.lower() == ".mdl"
    with recording() as opened, np.errstate(all="ignore"):
        scene = LOADERS[path.suffix.lower()](str(path))
    refs = [r for m in scene.materials for r in (m.base_texture, m.alpha_texture, m.normal_texture) if r]
    top = Path(game_root(str(path)) or path.parent) if source else path.parent
    prefix = "game" if source else "model"
    files: Files = {}
    for found in {Path(p) for p in opened} | {Path(r.resolved_path) for r in refs if r.resolved_path}:
        if found.is_file() and found.is_relative_to(top):
            files[f"{prefix}/{found.relative_to(top).as_posix()}"] = found.read_bytes()
    return TreeSeed(name, f"{prefix}/{path.relative_to(top).as_posix()}", files)


def seed_makers(samples: Path | None, scratch: Path) -> dict[str, Callable[[], TreeSeed]]:
    """Every seed by name, made only when asked (samples are imported once to find their files)."""
    from fuzzing import sample_seeds

    originals = sample_seeds(samples) if samples else []
    textures = [s.parts["vtf"] for s in originals if "vtf" in s.parts]
    makers: dict[str, Callable[[], TreeSeed]] = {}
    for seed in synthetic_trees(textures):
        makers[seed.name] = lambda seed=seed: seed
    for s in originals:
        kind = "ms3d" if "ms3d" in s.parts else "source" if "mdl" in s.parts else None
        kind = "goldsrc" if s.oracle.__name__ == "check_goldsrc" else kind
        if kind:
            path = samples / kind / s.name
            path = path if path.exists() else samples / "coverage" / kind / s.name  # formats added later
            makers[s.name] = lambda s=s, path=path: sample_tree(s.name, path)
    for number, (name, build) in enumerate(hostile_builders().items()):
        makers[name] = lambda name=name, build=build, n=number: built(name, build, scratch / f"seed-{n}")
    return makers


def tree_seeds(samples: Path | None, scratch: Path, only: list[str] | None = None) -> list[TreeSeed]:
    """The seeds (whose names contain one of ``only``, when given), each with the canary folder beside it."""
    canary = canary_files(scratch)
    seeds = []
    for name, make in seed_makers(samples, scratch).items():
        if not only or any(word in name for word in only):
            seed = make()
            seed.files = {**canary, **seed.files}
            seeds.append(seed)
    return seeds


# --- mutation ------------------------------------------------------------------------------------------------


def splice_name(data: bytes, rng: random.Random, text: bool) -> bytes:
    """A name inside the file (texture, material, include) replaced by one that climbs toward the canary: in a VMT
    a quoted value, in a binary file a printable run overwritten in place (the layout stays)."""
    name = rng.choice(TRAVERSALS).encode()
    if text:
        values = list(re.finditer(rb'"([^"\r\n]*)"', data))
        if values:
            a, b = rng.choice(values).span(1)
            return data[:a] + name + data[b:]
    runs = list(re.finditer(rb"[\x20-\x7e]{4,}", data[: 1 << 22]))
    if not runs:
        return data
    a = rng.choice(runs).start()
    patch = (name + b"\0")[: len(data) - a]
    return data[:a] + patch + data[a + len(patch) :]


def mutate_tree(seed: TreeSeed, rng: random.Random, formats: set[str] | None = None) -> tuple[Files, str]:
    """One file of the set mutated (the model more often than its companions); what was done, in words."""
    from fuzzing import mutate

    mutable = [p for p in seed.mutable if formats is None or FORMATS[Path(p).suffix.lower()] in formats]
    target = seed.model if seed.model in mutable and rng.random() < 0.4 else rng.choice(mutable)
    data = seed.files[target]
    assert isinstance(data, bytes)
    if rng.random() < 0.1:
        return dict(seed.files, **{target: splice_name(data, rng, target.endswith(".vmt"))}), f"name in {target}"
    return dict(seed.files, **{target: mutate(data, rng)}), f"bytes of {target}"


def operator_options(model: str, rng: random.Random) -> dict[str, Any]:
    """Half the cases with the defaults, half with options that take other code paths."""
    if rng.random() < 0.5:
        return {}
    if model.lower().endswith(".ms3d"):
        return {
            "split_groups": rng.choice(["GROUPS", "SINGLE"]),
            "import_animation": rng.random() < 0.8,
            "bone_tails": rng.choice(["CHILD", "AXIS"]),
            "use_normals": rng.random() < 0.8,
            "use_smoothing_groups": rng.random() < 0.8,
        }
    return {
        "units": rng.choice(["INCHES", "HAMMER", "SOURCE"]),
        "lod": rng.choice([0, 0, 1, 7]),
        "all_lods": rng.random() < 0.2,
        "bone_orientation": rng.choice(["CHILD", "SOURCE"]),
        "import_hitboxes": rng.random() < 0.5,
        "armature_for_static_props": rng.random() < 0.3,
        "import_animations": rng.random() < 0.8,
        "find_materials": rng.random() < 0.9,
    }


# --- the worker (bpy) ----------------------------------------------------------------------------------------

Problem = tuple[str, str]  # (kind, one line)
_LOG = Path()


def _redirect_output(log: Path) -> TextIO:
    """Results go out on a private copy of stdout; fd 1 and 2 (Python's and Blender's C output) go to the log."""
    global _LOG
    _LOG = log
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return protocol


def _take_output() -> str:
    """What the process printed since the last call (C buffers flushed too); the log starts over."""
    import ctypes

    sys.stdout.flush()
    sys.stderr.flush()
    ctypes.CDLL(None).fflush(None)
    text = _LOG.read_bytes().decode("utf-8", "replace")
    os.truncate(_LOG, 0)
    return text


def _reset_peak() -> None:
    """Linux resets the resident high-water mark on request, so each case's peak is its own."""
    with suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_bytes() -> int:
    from peak_memory import peak_bytes

    return peak_bytes()


def datablock_counts() -> dict[str, int]:
    """As ``conftest.datablock_counts``, without the add-on's module (the worker loads the add-on under its own
    package name)."""
    import bpy

    names = [p.identifier for p in bpy.types.BlendData.bl_rna.properties if p.type == "COLLECTION"]
    return {name: len(getattr(bpy.data, name)) for name in names}


def fcurves(action: Any) -> list[Any]:
    """An action's F-curves on any version (5.0 keeps them only in the layers' channelbags)."""
    if not getattr(action, "layers", None):
        return list(action.fcurves)
    return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags for fc in bag.fcurves]


def _not_finite(collection: Any, attribute: str, width: int) -> bool:
    import numpy as np

    values = np.empty(len(collection) * width, np.float32)
    collection.foreach_get(attribute, values)
    return not np.isfinite(values).all()


def non_finite_data() -> list[str]:
    """Where the file now holds NaN or infinity: object transforms, vertices, shape keys, bones, keyframes."""
    import bpy
    import numpy as np

    bad = [
        f"object {o.name!r}"
        for o in bpy.data.objects
        if not np.isfinite([*o.location, *o.rotation_euler, *o.rotation_quaternion, *o.scale]).all()
    ]
    bad += [f"mesh {m.name!r}" for m in bpy.data.meshes if _not_finite(m.vertices, "co", 3)]
    bad += [f"shape key {b.name!r}" for k in bpy.data.shape_keys for b in k.key_blocks if _not_finite(b.data, "co", 3)]
    bad += [
        f"bone {b.name!r}"
        for a in bpy.data.armatures
        for b in a.bones
        if not np.isfinite([*b.head_local, *b.tail_local]).all()
    ]
    bad += [
        f"action {a.name!r} {fc.data_path}[{fc.array_index}]"
        for a in bpy.data.actions
        for fc in fcurves(a)
        if _not_finite(fc.keyframe_points, "co", 2)
    ]
    bad += [f"image {i.name!r}" for i in bpy.data.images if _float_image(i) and _not_finite_pixels(i)]
    return bad


def _not_finite_pixels(image: Any) -> bool:
    import numpy as np

    values = np.empty(image.size[0] * image.size[1] * image.channels, np.float32)
    image.pixels.foreach_get(values)
    return not np.isfinite(values).all()


def _float_image(image: Any) -> bool:
    """A float image (HDR textures: packed DDS or OpenEXR); reading its size makes Blender decode it."""
    if image.packed_file is None or not image.name.lower().endswith((".dds", ".exr")):
        return False
    return image.size[0] > 0 and image.is_float


def _under(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f + os.sep) for f in folders)


def canary_problems(opened: list[str], canaries: list[str], secret: str) -> list[Problem]:
    """Opened or listed through Python (followed through links), loaded as an image by Blender, or its secret
    text copied into the file."""
    import bpy

    folders = sorted({os.path.realpath(c) for c in canaries} | {os.path.abspath(c) for c in canaries})
    hits = sorted({p for p in opened if _under(p, folders) or _under(os.path.realpath(p), folders)})
    images = [i.filepath_from_user() for i in bpy.data.images if i.filepath]
    hits += [f"image {p}" for p in images if _under(os.path.realpath(p), folders)]
    leaked = [
        f"{name} {block.name!r}"
        for name in datablock_counts()
        for block in getattr(bpy.data, name)
        if secret in block.name or secret in repr(dict(block.items()) if hasattr(block, "items") else {})
    ]
    problems = [("canary", f"touched outside the roots: {hits[:3]}")] if hits else []
    return problems + ([("canary", f"canary text in {leaked[:3]}")] if leaked else [])


def state_problems(ok: bool, before: dict[str, int]) -> list[Problem]:
    """A failed import changes nothing; a successful one leaves only finite numbers."""
    if not ok:
        after = datablock_counts()
        changed = {k: f"{before[k]}->{after[k]}" for k in before if before[k] != after.get(k)}
        return [("rollback", f"a failed import left datablocks behind: {changed}")] if changed else []
    bad = non_finite_data()
    return [("non-finite", f"NaN or infinity in {bad[:4]}")] if bad else []


def _our_frame(line: str) -> str:
    """``io_ms3d_mdl/x.py:12 in f`` for a traceback line (Python's format or faulthandler's) in the project's code
    outside the tests, else empty."""
    found = re.search(r'File "([^"]+)", line (\d+),? in (\S+)', line)
    if not found or not Path(found[1]).is_relative_to(ROOT) or Path(found[1]).is_relative_to(ROOT / "tests"):
        return ""
    return f"{Path(found[1]).relative_to(ROOT).as_posix()}:{found[2]} in {found[3]}"


def innermost(lines: list[str], first: bool = False) -> str:
    """The innermost of our frames: the last in a Python traceback, the first in faulthandler's stack."""
    ours = [frame for frame in map(_our_frame, lines) if frame]
    return (ours[0] if first else ours[-1]) if ours else ""


def traceback_head(output: str) -> str:
    """The exception line of the first traceback printed, and where in our code it was raised."""
    lines = output[output.find("Traceback") :].splitlines()
    end = next((i for i, line in enumerate(lines[1:], 1) if line and not line.startswith(" ")), len(lines))
    error = lines[end].strip()[:240] if end < len(lines) else ""
    where = innermost(lines[:end])
    return f"{error} at {where}" if where else error


def stack_head(output: str) -> str:
    """Where a killed or crashed worker was in our code: faulthandler prints the stacks on a fatal signal (and on
    SIGUSR1, which the parent sends before killing a worker that hangs), innermost frame first."""
    fatal = output.rfind("Fatal Python error")
    start = fatal if fatal >= 0 else output.find("(most recent call first)")
    if start < 0:
        return ""
    lines = output[start:].splitlines()
    title = lines[0].strip() if fatal >= 0 else "stack"
    where = innermost(lines, first=True)
    return f"{title} at {where}" if where else title


def output_problems(output: str, problems: list[Problem]) -> list[Problem]:
    """A traceback our code printed is a finding; when the case already failed for it, it says where."""
    if "Traceback" in output:
        head = traceback_head(output)
        if problems:
            return [(problems[0][0], f"{problems[0][1]} | {head}"), *problems[1:]]
        return [("traceback", head)]
    if "internal error" in output and not problems:
        line = next(line for line in output.splitlines() if "internal error" in line)
        return [("internal-error", line.strip()[:300])]
    return problems


@dataclass
class Batch:
    """The batch converter's per-file step (``io_ms3d_mdl/cli``, what ``scripts/batch_import.py`` runs in each of
    its workers) with the settings and importer it gets there."""

    side: ModuleType  # io_ms3d_mdl.cli.blender_side
    task: type
    settings: Any
    import_file: Callable[..., Any]


def via_operator(case: dict[str, Any]) -> tuple[bool, str, list[Problem]]:
    """Success, or our message in an ERROR report (bpy.ops raises it as a RuntimeError); anything else is a bug."""
    import bpy

    model = case["model"]
    operator = bpy.ops.import_scene.ms3d if model.lower().endswith(".ms3d") else bpy.ops.import_scene.source_mdl
    try:
        status = operator(filepath=model, **case["options"])
    except RuntimeError as exc:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else ""
        if "internal error" in text:
            return False, text, [("internal-error", first[:300])]
        if text.startswith("Error: Import failed: "):
            return False, text, []
        return False, text, [("exception", f"RuntimeError: {first[:300]}")]
    except BaseException as exc:  # whatever escapes the operator is the finding
        traceback.print_exc()
        return False, repr(exc), [("exception", f"{type(exc).__name__}: {str(exc)[:300]}")]
    if status == {"FINISHED"}:
        return True, "", []
    return False, str(status), [("outcome", f"the operator returned {sorted(status)} without an error report")]


def via_batch(case: dict[str, Any], batch: Batch) -> tuple[bool, str, list[Problem]]:
    """The converter imports, then saves the .blend: a failed file's error must be the import's own message, not an
    exception the converter caught."""
    errors: list[str | None] = []

    def watched(*args: Any) -> Any:
        result = batch.import_file(*args)
        errors.append(result.error)
        return result

    record = batch.side.convert_one(watched, batch.task(Path(case["model"]), Path(case["target"])), batch.settings)
    if record["status"] == "ok":
        return True, "", []
    error = record.get("error", "")
    if "internal error" in error:
        return False, error, [("internal-error", f"batch: {error[:300]}")]
    if errors and errors[-1] is not None and error == batch.side.one_line(errors[-1]):
        return False, error, []
    return False, error, [("exception", f"batch: {error[:300]}")]


def run_case(case: dict[str, Any], batch: Batch) -> dict[str, Any]:
    """One import, then every property checked; the result line for the parent."""
    before = datablock_counts()
    _take_output()
    _reset_peak()
    with recording() as opened:
        start = time.perf_counter()
        if case["via"] == "batch":
            ok, message, problems = via_batch(case, batch)
        else:
            ok, message, problems = via_operator(case)
        seconds = time.perf_counter() - start
    problems += state_problems(ok, before)
    problems += canary_problems(opened, case["canaries"], case["secret"])
    output = _take_output()
    problems = output_problems(output, problems)
    peak = _peak_bytes()
    if seconds > case["seconds"]:
        problems.append(("time", f"took {seconds:.1f} s (bound {case['seconds']:g} s)"))
    if peak > case["memory"]:
        problems.append(("memory", f"peak resident {peak / 2**20:.0f} MiB (bound {case['memory'] / 2**20:.0f} MiB)"))
    return {
        "ok": ok,
        "message": message[:500],
        "seconds": seconds,
        "peak": peak,
        "problems": problems,
        "output": output[-20000:] if problems else "",
    }


def load_batch() -> Batch:
    from io_ms3d_mdl.cli import blender_side
    from io_ms3d_mdl.cli.files import Task
    from io_ms3d_mdl.cli.settings import Settings

    settings = Settings("blend", True, "fuzz")
    return Batch(blender_side, Task, settings, blender_side.importer(settings))


def serve(protocol: TextIO) -> None:
    """Register the add-on (as the tests do) and import case after case, each from an empty file."""
    import bpy

    from io_ms3d_mdl import blender as addon

    addon.register()
    try:
        batch = load_batch()
        bpy.ops.wm.read_factory_settings(use_empty=True)
        protocol.write("READY\n")
        for line in sys.stdin:
            result = run_case(json.loads(line), batch)
            protocol.write("RESULT " + json.dumps(result) + "\n")
            bpy.ops.wm.read_factory_settings(use_empty=True)
    finally:
        addon.unregister()


def worker(log: Path) -> None:
    """Leaves through os._exit: the bpy module's own teardown is slow, and hangs or crashes after some failures."""
    import faulthandler

    protocol = _redirect_output(log)
    faulthandler.enable()  # a crash prints the Python stack into the log, which the parent saves
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # so does a hang, before the parent kills it
    code = 0
    try:
        serve(protocol)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(Path(sys.argv[2]))
