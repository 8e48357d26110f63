"""The MS3D writer is the reader's exact inverse: every sample read and written again gives back its bytes, except
the leftovers after the zero that ends a name field (not data: see ms3d_canonical.py)."""

from __future__ import annotations

import pytest
from conftest import sample_files, sample_names_to_parametrize, sample_path
from ms3d_canonical import canonical, differing_bytes

from io_ms3d_mdl.formats.ms3d.reader import read_ms3d, read_ms3d_bytes
from io_ms3d_mdl.formats.ms3d.writer import fixed_field, write_ms3d_bytes
from io_ms3d_mdl.formats.text import decode_text, encode_text

# Files whose name fields hold leftovers after their terminating zero, and how many such bytes (all others: 0).
NAME_FIELD_LEFTOVERS = {
    "akadjoker__IrrlichtGameObject/gun.ms3d": 187,
    "akadjoker__IrrlichtGameObject/morbo/morbo.ms3d": 196,
    "JuhaLukkari__Simple3DWorld/Model_empty.ms3d": 133,
    "akadjoker__H3DView/media/Bird.ms3d": 194,
    "akadjoker__H3DView/media/bones2.ms3d": 176,
    "akadjoker__H3DView/media/cube.ms3d": 194,
    "akadjoker__H3DView/media/dwarf.ms3d": 171,
    "assimp__assimp/jeep1.ms3d": 176,
    "assimp__assimp/twospheres_withmats.ms3d": 400,
    "nemox-tut10/rock.ms3d": 157,
    "soulsheng__ms3d-render/Model.ms3d": 383,
}


@pytest.mark.parametrize("name", sample_names_to_parametrize("ms3d", "*.ms3d"))
def test_every_sample_is_written_back_byte_for_byte(name):
    path = sample_path("ms3d", name)
    data = path.read_bytes()
    out = write_ms3d_bytes(read_ms3d(path))
    assert out == canonical(data)
    assert differing_bytes(out, data) == NAME_FIELD_LEFTOVERS.get(name, 0)


def test_the_corpus_is_there():
    assert len(sample_files("ms3d", "*.ms3d")) >= 13


def test_text_round_trips_through_the_lenient_decoder():
    for text in ("plain", "Grüße", "черепаха", "龟"):
        assert decode_text(encode_text(text)) == text
    assert encode_text("Grüße") == "Grüße".encode("cp1252")  # MilkShape's own code page first


def test_a_name_past_its_field_is_refused_with_what_it_is():
    assert fixed_field("x" * 32, 32, "n") == b"x" * 32  # exactly full: no terminator, as MilkShape writes
    with pytest.raises(ValueError, match=r"joint 3 name 'y+' is 33 bytes long; MilkShape 3D holds at most 32"):
        fixed_field("y" * 33, 32, f"joint 3 name '{'y' * 33}'")


def test_written_model_reads_back_equal():
    path = sample_path("ms3d", "akadjoker__H3DView/media/dwarf.ms3d")
    model = read_ms3d(path)
    again = read_ms3d_bytes(write_ms3d_bytes(model))
    assert again.model_comment == model.model_comment
    assert [j.name for j in again.joints] == [j.name for j in model.joints]
    assert again.extended_blocks == model.extended_blocks
