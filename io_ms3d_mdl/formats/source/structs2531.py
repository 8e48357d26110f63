"""Record layouts of Vampire: The Masquerade – Bloodlines models (Troika's early Source, MDL version 2531, VTX
version 107), as measured on the Unofficial Patch's 276 models and matching the public readers' facts (Crowbar's
``SourceModel2531``, SourceIO's ``v2531``). Sizes are asserted at import.

What differs from 44–49: the header is 424 bytes (a 128-byte name, one unknown vector after the illumination
position, sequence groups instead of nodes); bones are 160 bytes (no Euler angles, a four-float rotation scale,
no alignment quaternion); a model is 224 bytes and keeps its OWN vertices (no ``.vvd``) in one of three layouts
named by its ``vertexlisttype``; meshes are 60 bytes; textures 20; attachments 60; hit boxes 32 (no name).

Sequence events are 76 bytes: 44–49's float cycle, int event, int type and char options[64], without the name
offset (neither public reader decodes them: Crowbar's 2531 event reading is commented out, SourceIO has none).
Measured on the patch's 276 models (2,111 sequences; ``tests/test_bloodlines_events.py``): 37 events in 12 models,
and wherever a sequence has events the next sequence's table starts 76 bytes per event further on (30 of 30); every
type is 0, every options string is text, every cycle lies in [0, 1] and, times the animation's frames − 1, lands on
a whole frame (9/40, 9/172, 27/37: studiomdl's frame / (frames − 1)) but in one sequence (crooked_cop's Line76, 9/460
on 320 frames: the cycle of rookied_cop's 461-frame animation of that name); the numbers are Source's (1003 a scripted
sequence's script event with options "1"/"2", 3002 a weapon event, 5001 a muzzle flash, 6001 brass) or Bloodlines'
own (4100/4101 naming the walkie-talkie model a cop takes and puts away, 5105 naming a view-model activity).

Faces (measured on the 60 models of the patch with flex descriptors; ``tests/test_source_bloodlines_flex.py``).
The header's flex descriptor (4 bytes: a name offset relative to the record), controller (20 bytes: type and name
offsets, local-to-global, min, max) and rule tables (12 bytes, each pointing at 8-byte operations) are 44–49's:
in the 59 files with controllers the three tables lie back to back (65 × 4, then 44 × 20 bytes), every name
resolves to text and every rule's flex and every FETCH1/FETCH2 operand is in range (59 models of 65 descriptors,
44 controllers and 60 rules; the 60th, female_raver_1, has a lone descriptor and no controllers or rules). As
Crowbar and SourceIO read them.

A flex is 32 bytes: 44–49's descriptor, four targets, vertex count and vertex offset (relative to the flex),
then one int that is 1 in all 5,401 flexes; there is no flex pair and no vertex-animation type. Its vertex
animations are 8 bytes each (SourceIO's ``VertAnimV2531``): a mesh-relative u16 vertex index and 6 bytes of
delta. Evidence: in 286 meshes the 5,401 tables follow one another with no gap at 8 bytes a vertex (5,115 of
5,115 neighbours), every index is below its mesh's vertex count, and the indices of ``upper_right`` land on the
right eyelid. The 6 delta bytes are NOT decoded: SourceIO reads them as three int16 / 32767 in model space, but
so read, each of over 100 mirrored vertex pairs of the right and left smiles (AU12R/AU12L) moves sideways the same
way, where mirrored shapes move opposite ways; they are not fp16 either (NaNs). What the
bytes show (for a future decoder): the low 2 bits of bytes 0 and 2 and the top 2 bits of byte 4 are always 0
(three 14-bit fields: bytes 0–1 >> 2, bytes 2–3 >> 2, byte 4 · 256 + byte 5); the high parts (bytes 1, 3, 4)
vary smoothly over the face, the low ones do not. No linear or spherical reading tried (SourceIO's; the fields as
signed or unsigned components; two of them as angles in either order, over π or 2π, as elevation or polar angle,
with the third or byte 4 as length) made the deltas of vertices sharing a triangle agree as a deformation's do: over
female_citizen_3's face flexes they differ by a median 0.5–1.1 of the deltas' spread (shuffled: 1.5–2.0). One
lead: on that model's lower teeth, which the jaw flex AU27Z turns about a sideways hinge, byte 4 is linear in the
distance from one hinge line (R² > 0.99), as a rotation's motion length is, and mirrored vertices share all six
bytes (no sideways motion); byte 5 there is largest on the midline (45) and falls sideways (to 15).

An eyeball is 140 bytes: 44–49's up to ``lowerlidflexdesc``, then four floats (Crowbar's min/max pitch and yaw;
all 0 here) without 44–49's tail; in 58 of the flexed models' 60 model records with eyeballs the next table
starts 280 bytes after their two eyeballs (no table follows in the other two), whose lid descriptors name
``upper_right``/``lower_right`` and ``upper_left``/``lower_left``.
"""

from __future__ import annotations

import numpy as np

from . import structs as S
from .structs import V3, fields_between

VERSION = 2531
VTX_VERSION = 107

# Where a record keeps a run of fields 44–49 also has, in the same order and formats, the run is taken from the
# 44–49 record (``structs``), so only what differs is spelled out here.
HEADER = np.dtype(
    [
        *fields_between(S.STUDIOHDR, "id", "checksum"),
        ("name", "V128"),
        *fields_between(S.STUDIOHDR, "length", "illumposition"),
        ("unknown_vector", *V3),
        *fields_between(S.STUDIOHDR, "hull_min", "flags"),
        ("unknown", "<i4", 2),
        *fields_between(S.STUDIOHDR, "numbones", "localseqindex"),
        ("sequencesindexed", "<i4"),
        ("numseqgroups", "<i4"),
        ("seqgroupindex", "<i4"),
        *fields_between(S.STUDIOHDR, "numtextures", "localattachmentindex"),
        ("numtransitions", "<i4"),
        ("transitionindex", "<i4"),
        *fields_between(S.STUDIOHDR, "numflexdesc", "keyvaluesize"),
        *fields_between(S.STUDIOHDR, "numincludemodels", "includemodelindex"),
        ("unknown_tail", "<i4", 3),
    ]
)
BONE = np.dtype(
    [
        # quat is x, y, z, w, as 44–49 (the bind pose: checked against poseToBone in the tests)
        *fields_between(S.BONE, "sznameindex", "quat"),
        ("posscale", *V3),
        ("rotscale", "<f4", 4),
        ("posetobone", "<f4", (3, 4)),
        *fields_between(S.BONE, "flags", "contents"),
    ]
)
MODEL = np.dtype(
    [
        ("name", "V128"),
        *fields_between(S.MODEL, "type", "tangentsindex"),  # vertexindex: bytes from this record to its vertices
        ("vertexlisttype", "<i4"),  # 0: skinned floats (44 B), 1: unskinned 16-bit (12 B), 2: compressed 8-bit (8 B)
        ("vertexoffset", *V3),  # compressed positions: offset + scale · stored value
        ("vertexscale", *V3),
        *fields_between(S.MODEL, "numattachments", "eyeballindex"),
        ("unknown", "<i4", 6),
    ]
)
MESH = np.dtype([*fields_between(S.MESH, "material", "materialparam"), ("unknown", "<i4", 7)])
TEXTURE = np.dtype([("sznameindex", "<i4"), ("flags", "<i4"), ("width", "<f4"), ("height", "<f4"), ("unknown", "<f4")])
ATTACHMENT = np.dtype(fields_between(S.ATTACHMENT, "sznameindex", "local"))  # without the unused tail
BBOX = np.dtype(fields_between(S.BBOX, "bone", "bbmax"))  # without the name and the unused tail

ANIMDESC = np.dtype(
    [
        *fields_between(S.ANIMDESC, "sznameindex", "movementindex"),  # flags 0x1: looping; no delta animations seen
        ("bbmin", *V3),
        ("bbmax", *V3),
        # animindex is relative to the descriptor: one 32-byte entry per bone (animation2531.py)
        *fields_between(S.ANIMDESC, "animindex", "ikruleindex"),
        ("unused", "<i4", 3),
    ]
)

SEQDESC = np.dtype(  # 764 bytes; the animation grid is inline (16 × 16 int16), not behind an offset as in 44–49
    [
        *fields_between(S.SEQDESC_HEAD, "szlabelindex", "eventindex"),
        ("bbmin", *V3),
        ("bbmax", *V3),
        ("numblends", "<i4"),
        ("anim", "<i2", (16, 16)),
        ("movementindex", "<i4"),
        ("groupsize", "<i4", 2),
        ("rest", "V184"),  # blend parameters, sequence group, fades, transitions ... (not read)
    ]
)
# 76 bytes: the 44–49 event without its name offset (cycle = frame / (frames - 1), event, type, options[64]).
EVENT = np.dtype(fields_between(S.EVENT, "cycle", "options"))

FLEX = np.dtype([*fields_between(S.FLEX, "flexdesc", "vertindex"), ("unknown", "<i4")])  # unknown: always 1
# A flex's vertex: its delta as a direction and a length (the direction a byte offset into the 5,314-entry table of
# ``directions2531``, the length a byte in 1/32 units), then its normal's change the same way (a length byte of about
# 2/255ths: normals plus their changes stay unit length; not used). The length unit is measured, not read from the
# engine: it is the one with which each upper eyelid's lowered shape drops the lid by the heights the compiler wrote
# into its flex targets (1/31 and 1/33 fit worse), and it turns a jaw flex's teeth rigidly (the tests).
VERTANIM = np.dtype(
    [("index", "<u2"), ("direction", "<u2"), ("ndirection", "<u2"), ("length", "u1"), ("nlength", "u1")]
)
EYEBALL = np.dtype(
    [*fields_between(S.EYEBALL, "sznameindex", "lowerlidflexdesc"), ("pitch", "<f4", 2), ("yaw", "<f4", 2)]
)

# The three vertex layouts (``MODEL.vertexlisttype``). Skinned: three bone slots weighted in 255ths (they sum to
# 255; a slot of weight 0 is unused), float position, normal and UV. Unskinned and compressed: quantised positions
# (16-bit: offset + scale·q; 8-bit: offset + scale·q/255, the scale being the model's extent), a normal code, 16-bit
# UVs. The unskinned normal is the 16-bit word at offset 6 (the byte named "normal" and the one after it), a byte
# offset into the 5,314-entry table of ``directions2531``; the compressed one is an entry of its 202-entry table.
# Public readers (SourceIO, Crowbar) read these bytes as raw components or leave them unread.
VERTEX_SKINNED = np.dtype(
    [
        ("weights", "u1", 3),
        ("unknown", "u1"),
        ("bones", "<i2", 3),
        ("unknown2", "<i2"),
        ("pos", *V3),
        ("normal", *V3),
        ("uv", "<f4", 2),
    ]
)
VERTEX_UNSKINNED = np.dtype([("pos", "<u2", 3), ("normal", "u1"), ("unknown", "u1"), ("uv", "<u2", 2)])
VERTEX_COMPRESSED = np.dtype([("pos", "u1", 3), ("normal", "u1"), ("uv", "<u2", 2)])
VERTEX_LAYOUTS = {0: VERTEX_SKINNED, 1: VERTEX_UNSKINNED, 2: VERTEX_COMPRESSED}
TANGENT_SIZE = 16

# The pool a 2531 model's vertices are decoded into: the VVD vertex's fields (the scene reads these names), with
# 16-bit bone indices as the file stores them.
POOL_VERTEX = np.dtype([("weights", "<f4", 3), ("bones", "<i2", 3), *fields_between(S.VVD_VERTEX, "numbones", "uv")])

# VTX 107 (packed): the 7 layout's tree with 16-bit counts in meshes, strip groups and strips.
VTX_MESH = np.dtype([("numstripgroups", "<u2"), ("flags", "u1"), ("unknown", "u1"), ("stripgroupheaderoffset", "<i4")])
VTX_STRIPGROUP = np.dtype(
    [
        ("numverts", "<u2"),
        ("numindices", "<u2"),
        ("numstrips", "<u2"),
        ("flags", "u1"),
        ("unknown", "u1"),
        ("vertoffset", "<i4"),
        ("indexoffset", "<i4"),
        ("stripoffset", "<i4"),
    ]
)
VTX_STRIP = np.dtype(
    [
        ("numindices", "<u2"),
        ("indexoffset", "<u2"),
        ("numverts", "<u2"),
        ("vertoffset", "<u2"),
        ("numbones", "u1"),
        ("flags", "u1"),
        ("numbonestatechanges", "<u2"),
        ("bonestatechangeoffset", "<i4"),
    ]
)
# A strip group flagged STATIC_PROP_VERTICES (0x10) stores only the mesh vertex id of each of its vertices.
VTX_VERTEX = np.dtype([("unknown", "<u2", 5), ("origmeshvertid", "<u2")])
VTX_STATIC_VERTEX = np.dtype([("origmeshvertid", "<u2")])
VTX_STATIC_PROP_VERTICES = 0x10

for _dtype, _size in (
    (HEADER, 424),
    (BONE, 160),
    (MODEL, 224),
    (MESH, 60),
    (TEXTURE, 20),
    (ATTACHMENT, 60),
    (BBOX, 32),
    (ANIMDESC, 72),
    (SEQDESC, 764),
    (EVENT, 76),
    (FLEX, 32),
    (VERTANIM, 8),
    (EYEBALL, 140),
    (VERTEX_SKINNED, 44),
    (VERTEX_UNSKINNED, 12),
    (VERTEX_COMPRESSED, 8),
    (VTX_MESH, 8),
    (VTX_STRIPGROUP, 20),
    (VTX_STRIP, 16),
    (VTX_VERTEX, 12),
):
    assert _dtype.itemsize == _size, (_dtype, _size)
assert HEADER.fields["length"][1] == 140 and HEADER.fields["flags"][1] == 228 and HEADER.fields["numbones"][1] == 240
assert HEADER.fields["numbodyparts"][1] == 320 and HEADER.fields["includemodelindex"][1] == 408
