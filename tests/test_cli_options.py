"""Every option of the two File › Import operators is a command-line flag, and the flags build exactly the options
the operators build from the same choices (the operators' own ``import_options`` is the reference)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import bpy

from io_ms3d_mdl.cli import batch, convert
from io_ms3d_mdl.cli.import_flags import OPERATOR_FLAGS, UNIT_SCALES, ImportChoices, choices_from

pytestmark = pytest.mark.skipif(bpy is None, reason="the operators need Blender (the bpy wheel)")
NOT_OPTIONS = {"filepath", "files", "directory", "filter_glob"}  # which files, not how they import


def operators():
    from io_ms3d_mdl.blender import operators as ops

    return {"import_scene.ms3d": ops.IMPORT_SCENE_OT_ms3d, "import_scene.source_mdl": ops.IMPORT_SCENE_OT_source_mdl}


def properties(cls) -> dict[str, object]:
    """An operator's properties and their defaults, read from its annotations (no registration needed; under
    ``from __future__ import annotations`` they are source text, evaluated as Blender does when it registers)."""
    found = {}
    for klass in reversed(cls.__mro__):
        for name, prop in vars(klass).get("__annotations__", {}).items():
            if isinstance(prop, str):
                prop = eval(prop, vars(sys.modules[klass.__module__]))
            if name not in NOT_OPTIONS and hasattr(prop, "keywords"):
                found[name] = prop.keywords.get("default")
    return found


def parse(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    convert.add_arguments(parser)
    return parser.parse_args(["model.mdl", *flags])


def from_operator(idname: str, **changed: object):
    """What the operator's own import_options() makes of its defaults with ``changed`` set."""
    cls = operators()[idname]
    return cls.import_options(SimpleNamespace(**{**properties(cls), **changed}))


def test_every_operator_property_has_a_flag_in_convert_and_batch():
    for idname, cls in operators().items():
        assert set(properties(cls)) == set(OPERATOR_FLAGS[idname]), idname
    for module in (convert, batch):
        parser = argparse.ArgumentParser()
        module.add_arguments(parser)
        known = {option for action in parser._actions for option in action.option_strings}
        assert {flag for flags in OPERATOR_FLAGS.values() for flag in flags.values()} <= known


def test_the_source_units_match_the_operator():
    from io_ms3d_mdl.blender.operators import UNIT_SCALES as OPERATOR_UNITS

    assert {k.lower(): v for k, v in OPERATOR_UNITS.items()} == UNIT_SCALES


def test_defaults_build_what_the_operators_build_with_all_animations():
    choices = choices_from(parse())
    assert choices.ms3d == from_operator("import_scene.ms3d")
    assert choices.source == from_operator("import_scene.source_mdl", animations="ALL")  # a conversion keeps all
    assert choices.textures == "pack" and properties(operators()["import_scene.source_mdl"])["texture_output"] == "PACK"


@pytest.mark.parametrize(
    ("flags", "ms3d", "source"),
    [
        (
            ["--scale", "0.01", "--axis-forward=-Y", "--axis-up", "Z", "--objects", "single", "--no-normals"],
            {"scale": 0.01, "axis_forward": "-Y", "axis_up": "Z", "split_groups": "SINGLE", "use_normals": False},
            {"units": "CUSTOM", "scale": 0.01, "animations": "ALL"},
        ),
        (
            ["--no-smoothing-groups", "--no-find-textures", "--bone-tails", "axis", "--animations", "none"],
            {"use_smoothing_groups": False, "find_textures": False, "bone_tails": "AXIS", "import_animation": False},
            {"animations": "NONE"},
        ),
        (
            ["--units", "hammer", "--lod", "3", "--bone-orientation", "source", "--armature-for-static-props"],
            {},
            {
                "units": "HAMMER",
                "lod": 3,
                "bone_orientation": "SOURCE",
                "armature_for_static_props": True,
                "animations": "ALL",
            },
        ),
        (
            ["--all-lods", "--no-attachments", "--hitboxes", "--no-materials", "--animations", "default"],
            {},
            {
                "all_lods": True,
                "import_attachments": False,
                "import_hitboxes": True,
                "find_materials": False,
                "animations": "DEFAULT",
            },
        ),
        (
            ["--no-animation-list", "--animations", "own", "--work-limit", "4", "--units", "source", "--scale", "2"],
            {"work_limit": 4.0, "scale": 2.0},
            {"import_animations": False, "animations": "OWN", "work_limit": 4.0, "units": "SOURCE"},
        ),
    ],
)
def test_flags_build_what_the_operators_build(flags, ms3d, source):
    choices = choices_from(parse(*flags))
    assert choices.ms3d == from_operator("import_scene.ms3d", **ms3d)
    assert choices.source == from_operator("import_scene.source_mdl", **source)


def test_roots_and_absolute_paths_are_the_preferences_as_flags(tmp_path):
    choices = choices_from(parse("--root", str(tmp_path), "--root", ".", "--absolute-texture-paths"))
    roots = (str(tmp_path), str(tmp_path.cwd().resolve()))
    assert choices.ms3d.search_roots == choices.source.search_roots == roots
    assert choices.ms3d.allow_absolute_paths  # the add-on's preference; Source models have no such paths


def test_choices_travel_to_workers_as_json():
    choices = choices_from(parse("--root", "/games/hl2", "--textures", "png", "--animations", "default"))
    assert ImportChoices.from_json(json.loads(json.dumps(choices.to_json()))) == choices
    assert dataclasses.asdict(choices)["source"]["search_roots"] == (str(Path("/games/hl2").resolve()),)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--lod", "8"], "--lod must be 0 to 7"),
        (["--scale", "0"], "--scale must be between"),
        (["--work-limit", "nan"], "--work-limit must be between"),
        (["--axis-forward", "Z", "--axis-up=-Z"], "must be different axes"),
    ],
)
def test_values_no_operator_accepts_are_refused(flags, message):
    with pytest.raises(ValueError, match=message):
        choices_from(parse(*flags))
