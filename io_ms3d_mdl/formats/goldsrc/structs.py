"""GoldSrc (Half-Life 1) studio model records, version 10, as numpy structured dtypes (the layout of the HL SDK's
``studio.h``). Offsets in these records are from the start of the file that holds them (unlike Source's, which
are relative to each record)."""

from __future__ import annotations

import numpy as np

MAGIC = b"IDST"
SEQUENCE_GROUP_MAGIC = b"IDSQ"
VERSION = 10

V3 = ("<f4", 3)

HEADER = np.dtype(
    [
        ("id", "S4"),
        ("version", "<i4"),
        ("name", "S64"),
        ("length", "<i4"),
        ("eyeposition", V3),
        ("min", V3),
        ("max", V3),
        ("bbmin", V3),
        ("bbmax", V3),
        ("flags", "<i4"),
        ("numbones", "<i4"),
        ("boneindex", "<i4"),
        ("numbonecontrollers", "<i4"),
        ("bonecontrollerindex", "<i4"),
        ("numhitboxes", "<i4"),
        ("hitboxindex", "<i4"),
        ("numseq", "<i4"),
        ("seqindex", "<i4"),
        ("numseqgroups", "<i4"),
        ("seqgroupindex", "<i4"),
        ("numtextures", "<i4"),
        ("textureindex", "<i4"),
        ("texturedataindex", "<i4"),
        ("numskinref", "<i4"),
        ("numskinfamilies", "<i4"),
        ("skinindex", "<i4"),
        ("numbodyparts", "<i4"),
        ("bodypartindex", "<i4"),
        ("numattachments", "<i4"),
        ("attachmentindex", "<i4"),
        ("soundtable", "<i4"),
        ("soundindex", "<i4"),
        ("soundgroups", "<i4"),
        ("soundgroupindex", "<i4"),
        ("numtransitions", "<i4"),
        ("transitionindex", "<i4"),
    ]
)
assert HEADER.itemsize == 244

SEQUENCE_GROUP_HEADER = np.dtype([("id", "S4"), ("version", "<i4"), ("name", "S64"), ("length", "<i4")])

BONE = np.dtype(
    [
        ("name", "S32"),
        ("parent", "<i4"),
        ("flags", "<i4"),
        ("bonecontroller", "<i4", 6),
        ("value", "<f4", 6),  # default position x, y, z and Euler angles (radians)
        ("scale", "<f4", 6),  # what one unit of packed animation value is worth, per channel
    ]
)
assert BONE.itemsize == 112

BONE_CONTROLLER = np.dtype(
    [("bone", "<i4"), ("type", "<i4"), ("start", "<f4"), ("end", "<f4"), ("rest", "<i4"), ("index", "<i4")]
)
HITBOX = np.dtype([("bone", "<i4"), ("group", "<i4"), ("bbmin", V3), ("bbmax", V3)])
SEQUENCE_GROUP = np.dtype([("label", "S32"), ("name", "S64"), ("unused1", "<i4"), ("unused2", "<i4")])
assert SEQUENCE_GROUP.itemsize == 104

SEQUENCE = np.dtype(
    [
        ("label", "S32"),
        ("fps", "<f4"),
        ("flags", "<i4"),
        ("activity", "<i4"),
        ("actweight", "<i4"),
        ("numevents", "<i4"),
        ("eventindex", "<i4"),
        ("numframes", "<i4"),
        ("numpivots", "<i4"),
        ("pivotindex", "<i4"),
        ("motiontype", "<i4"),
        ("motionbone", "<i4"),
        ("linearmovement", V3),
        ("automoveposindex", "<i4"),
        ("automoveangleindex", "<i4"),
        ("bbmin", V3),
        ("bbmax", V3),
        ("numblends", "<i4"),
        ("animindex", "<i4"),
        ("blendtype", "<i4", 2),
        ("blendstart", "<f4", 2),
        ("blendend", "<f4", 2),
        ("blendparent", "<i4"),
        ("seqgroup", "<i4"),
        ("entrynode", "<i4"),
        ("exitnode", "<i4"),
        ("nodeflags", "<i4"),
        ("nextseq", "<i4"),
    ]
)
assert SEQUENCE.itemsize == 176

EVENT = np.dtype([("frame", "<i4"), ("event", "<i4"), ("type", "<i4"), ("options", "S64")])
PIVOT = np.dtype([("org", V3), ("start", "<i4"), ("end", "<i4")])
ATTACHMENT = np.dtype([("name", "S32"), ("type", "<i4"), ("bone", "<i4"), ("org", V3), ("vectors", "<f4", (3, 3))])
assert ATTACHMENT.itemsize == 88

BODY_PART = np.dtype([("name", "S64"), ("nummodels", "<i4"), ("base", "<i4"), ("modelindex", "<i4")])
MODEL = np.dtype(
    [
        ("name", "S64"),
        ("type", "<i4"),
        ("boundingradius", "<f4"),
        ("nummesh", "<i4"),
        ("meshindex", "<i4"),
        ("numverts", "<i4"),
        ("vertinfoindex", "<i4"),
        ("vertindex", "<i4"),
        ("numnorms", "<i4"),
        ("norminfoindex", "<i4"),
        ("normindex", "<i4"),
        ("numgroups", "<i4"),
        ("groupindex", "<i4"),
    ]
)
assert MODEL.itemsize == 112
MESH = np.dtype(
    [("numtris", "<i4"), ("triindex", "<i4"), ("skinref", "<i4"), ("numnorms", "<i4"), ("normindex", "<i4")]
)
TEXTURE = np.dtype([("name", "S64"), ("flags", "<i4"), ("width", "<i4"), ("height", "<i4"), ("index", "<i4")])
assert TEXTURE.itemsize == 80

ANIM = np.dtype(("<u2", 6))  # per bone and blend: offsets of the six channels' value streams (0: none)

# Texture flags
FLATSHADE, CHROME, FULLBRIGHT, ADDITIVE, MASKED = 1, 2, 4, 32, 64
TEXTURE_FLAGS = {
    FLATSHADE: "flatshade",
    CHROME: "chrome",
    FULLBRIGHT: "fullbright",
    ADDITIVE: "additive",
    MASKED: "masked",
}
# Sequence flags and motion types
LOOPING = 1
MOTION_X, MOTION_Y, MOTION_Z = 1, 2, 4
