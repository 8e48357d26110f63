"""The strict QC and SMD/VTA checkers themselves (tests/qc_grammar.py, tests/smd_reader.py): each rule refuses what
studiomdl would misread, and accepts what it reads as written. The decompiler's outputs are checked with them in
test_decompile_outputs.py."""

from __future__ import annotations

import math

import pytest
import qc_grammar
import smd_reader
from qc_grammar import QcError
from smd_reader import SmdError

GOOD_QC = b"""// written by hand
$modelname "props/box.mdl"
$cdmaterials "models/props/"
$surfaceprop "metal"   ; a comment
$bbox -1 -2 -3 1 2 3.5
/* a block
   comment */
$bodygroup "body"
{
\tstudio "box_ref.smd"
\tblank
}
$texturegroup "skinfamilies"
{
\t{ "box" }
\t{ "box_red" }
}
$sequence "idle" "idle.smd" fps 30 loop activity ACT_IDLE 1
$attachment "l\xc3\xa9ger" "root" 0 0 1e-05 rigid
"""


def test_a_good_qc_parses_into_statements():
    statements = qc_grammar.parse(GOOD_QC)
    assert [s.command for s in statements] == [
        "$modelname",
        "$cdmaterials",
        "$surfaceprop",
        "$bbox",
        "$bodygroup",
        "$texturegroup",
        "$sequence",
        "$attachment",
    ]
    assert statements[2].values() == ["metal"]  # the ; comment is gone
    assert statements[4].values() == ["body", "{", "studio", "box_ref.smd", "blank", "}"]
    assert statements[-1].values()[0] == "léger"  # UTF-8 inside quotes is kept
    assert qc_grammar.named_files(statements) == ["box_ref.smd", "idle.smd"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (b'$modelname "a.mdl', "quote never closed"),
        (b'$modelname "a.mdl"', "no newline"),  # truncated: the last line is cut
        (b'$bodygroup "b"\n{\n studio "x.smd"\n', "never closed"),  # truncated inside braces
        (b'$modelname "a\n.mdl"\n', "runs over the end of its line"),
        (b"$bogus 1\n", "unknown command"),
        (b'"idle"\n', r"before any \$command"),
        (b"$bbox 0 0 0 1 1 nan\n", "not a finite number"),
        (b"$bbox 0 0 0 1 1 1.#QNAN\n", "not a finite number"),
        (b"$bbox 0 0 0 1 1 -inf\n", "not a finite number"),
        (b"$bbox 0 0 0 1 1\n 1\n", "needs 6 arguments on its line"),
        (b"$attachment l\xc3\xa9ger root 0 0 0\n", "inside an unquoted token"),
        (b"$attachment \xc3\xa9 root 0 0 0\n", "outside quotes"),
        (b"$attachment a$b$ root 0 0 0\n", "variable"),
        (b'$bodygroup "b" {studio "x.smd" }\n', "braces must stand alone"),
        (b'$bodygroup "b"\n}\n', "without its"),
        (b"$scale x\n", "not a number"),
        (b"$modelname " + b"a" * 1024 + b"\n", "limit is 1023"),
        (b"/* never closed\n", "never closed"),
    ],
)
def test_what_studiomdl_would_misread_is_refused(text, why):
    with pytest.raises(QcError, match=why):
        qc_grammar.parse(text, "t.qc")


def test_a_name_with_spaces_must_be_quoted_to_stay_one_name():
    """Crowbar's flex names with spaces broke the recompile: unquoted, a space splits the name."""
    unquoted = qc_grammar.parse(b"$model body body.smd {\n flexcontroller phoneme range 0 1 my flex\n}\n")
    quoted = qc_grammar.parse(b'$model body body.smd {\n flexcontroller phoneme range 0 1 "my flex"\n}\n')
    assert unquoted[0].values()[-3:] == ["my", "flex", "}"]
    assert quoted[0].values()[-2:] == ["my flex", "}"]


def test_comments_start_only_at_a_token():
    """``#`` and ``//`` inside a token are part of it (paths, names); at a token's start they end the line."""
    statements = qc_grammar.parse(b'$cdmaterials models/a#b//c # gone\n$modelname "x//y.mdl"\n')
    assert statements[0].values() == ["models/a#b//c"]
    assert statements[1].values() == ["x//y.mdl"]


def test_included_and_named_files_must_exist(tmp_path):
    (tmp_path / "m.qc").write_bytes(b'$include "more.qci"\n$body body "ref"\n')
    (tmp_path / "more.qci").write_bytes(b'$modelname "m.mdl"\n$sequence idle "idle.smd" fps 30\n')
    with pytest.raises(QcError, match=r"idle\.smd"):
        qc_grammar.check_file(tmp_path / "m.qc")
    (tmp_path / "idle.smd").write_bytes(b"")
    with pytest.raises(QcError, match="'ref'"):
        qc_grammar.check_file(tmp_path / "m.qc")
    (tmp_path / "ref.smd").write_bytes(b"")  # a name without extension means .smd
    assert [s.command for s in qc_grammar.check_file(tmp_path / "m.qc")] == ["$modelname", "$sequence", "$body"]


GOOD_SMD = b"""version 1
nodes
0 "root" -1
1 "bone with spaces" 0
end
skeleton
time 0
0 0 0 0 0 0 0
1 1.5 -2 3e-05 0.1 0.2 0.3
time 1
1 2 0 0 0 0 0
end
triangles
metal
0 0 0 0 0 0 1 0 0 2 0 0.25 1 0.75
0 1 0 0 0 0 1 1 0
1 0 1 0 0 0 1 0 1 1 1 1
end
"""


def test_a_good_smd_reads_into_arrays():
    smd = smd_reader.parse(GOOD_SMD)
    assert smd.names == ["root", "bone with spaces"]
    assert smd.parents.tolist() == [-1, 0]
    assert smd.vertices.shape == (3, 8)
    assert smd.materials == ["metal"]
    assert smd.weights[0] == [(0, 0.25), (1, 0.75)]
    assert smd.weights[1] == [(0, 1.0)]  # no links: the vertex's own bone
    assert smd.pose(1)[0].tolist() == [0] * 6  # bone 0 kept from frame 0
    assert smd.pose(1)[1].tolist() == [2, 0, 0, 0, 0, 0]


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        (b"version 1", b"version 2", "expected 'version 1'"),
        (b"0.1 0.2 0.3", b"0.1 nan 0.3", "finite decimals"),  # Crowbar's NaN
        (b"0.1 0.2 0.3", b"0.1 -1.#IND 0.3", "finite decimals"),
        (b"1 1 0", b"1 1 inf", "not a vertex line"),
        (b'1 "bone with spaces" 0', b'2 "bone with spaces" 0', "where node 1 was due"),
        (b'1 "bone with spaces" 0', b'1 "root" 0', "a second node"),
        (b'1 "bone with spaces" 0', b'1 "x" 1', "neither -1 nor an earlier"),
        (b"time 1", b"time 0", "time 0 after time 0"),
        (b"2 0 0.25 1 0.75", b"2 0 0.25 1 0.5", "sum to"),
        (b"2 0 0.25 1 0.75", b"3 0 0.25 1 0.75", "3 links announced"),
        (b"2 0 0.25 1 0.75", b"2 0 0.25 7 0.75", "not a node"),
        (b"0 0 0 0 0 0 0\n1 1.5", b"1 1.5", "first frame poses 1 of 2"),
    ],
)
def test_what_the_smd_rules_refuse(old, new, why):
    assert old in GOOD_SMD
    with pytest.raises(SmdError, match=why):
        smd_reader.parse(GOOD_SMD.replace(old, new, 1), "t.smd")


def test_a_truncated_smd_is_refused():
    for cut in (GOOD_SMD[:-4], GOOD_SMD[: GOOD_SMD.index(b"metal") + 6], GOOD_SMD[:-1]):
        with pytest.raises(SmdError, match=r"truncated|ends inside"):
            smd_reader.parse(cut, "t.smd")


GOOD_VTA = b"""version 1
nodes
0 "root" -1
end
skeleton
time 0
0 0 0 0 0 0 0
time 1
end
vertexanimation
time 0
0 0 0 0 0 0 1
1 1 0 0 0 0 1
time 1
1 1.5 0 0 0 0 1
end
"""


def test_a_vta_reads_its_shapes():
    smd = smd_reader.parse(GOOD_VTA)
    indices, values = smd.shapes[1]
    assert indices.tolist() == [1]
    assert math.isclose(values[0, 0], 1.5)
    with pytest.raises(SmdError, match="twice"):
        smd_reader.parse(GOOD_VTA.replace(b"time 1\n1 1.5", b"time 1\n1 1.5 0 0 0 0 1\n1 1.5"))
    with pytest.raises(SmdError, match="base frame"):
        smd_reader.parse(GOOD_VTA.replace(b"vertexanimation\ntime 0", b"vertexanimation\ntime -1"))
