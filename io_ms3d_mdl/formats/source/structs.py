"""Little-endian record layouts of Source studio models (MDL 44–49 and Respawn's 52/53, VVD 4, VTX 7, VVC), from
the SDK headers as distilled in the format notes (source-format.md §1) and, for Titanfall, Crowbar's
``SourceModel52``/``SourceModel53`` readers checked against real files. Sizes are asserted at import."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MDL_MAGIC = b"IDST"
VVD_MAGIC = b"IDSV"
ANI_MAGIC = b"IDAG"
SUPPORTED_MDL_VERSIONS = (44, 45, 46, 47, 48, 49, 52, 53)
VVC_MAGIC = b"IDCV"
VTX_VERSION = 7
VERTEX_SIZE = 48  # mstudiovertex_t: model.vertexindex is a byte offset into the VVD pool
TANGENT_SIZE = 16

V3 = ("<f4", 3)


def fields_between(dtype: np.dtype, first: str, last: str) -> list[tuple]:
    """``dtype``'s fields from ``first`` to ``last`` inclusive, as (name, format[, shape]) for a new dtype: the
    layouts of other versions (52/53 here, Bloodlines' 2531) are built from the runs they share with 44–49."""
    names = list(dtype.names)
    out = []
    for name in names[names.index(first) : names.index(last) + 1]:
        base = dtype.fields[name][0]
        out.append((name, base.subdtype[0], base.subdtype[1]) if base.subdtype else (name, base))
    return out


STUDIOHDR = np.dtype(
    [
        ("id", "S4"),
        ("version", "<i4"),
        ("checksum", "<i4"),
        ("name", "V64"),
        ("length", "<i4"),
        ("eyeposition", *V3),
        ("illumposition", *V3),
        ("hull_min", *V3),
        ("hull_max", *V3),
        ("view_bbmin", *V3),
        ("view_bbmax", *V3),
        ("flags", "<i4"),
        ("numbones", "<i4"),
        ("boneindex", "<i4"),
        ("numbonecontrollers", "<i4"),
        ("bonecontrollerindex", "<i4"),
        ("numhitboxsets", "<i4"),
        ("hitboxsetindex", "<i4"),
        ("numlocalanim", "<i4"),
        ("localanimindex", "<i4"),
        ("numlocalseq", "<i4"),
        ("localseqindex", "<i4"),
        ("activitylistversion", "<i4"),
        ("eventsindexed", "<i4"),
        ("numtextures", "<i4"),
        ("textureindex", "<i4"),
        ("numcdtextures", "<i4"),
        ("cdtextureindex", "<i4"),
        ("numskinref", "<i4"),
        ("numskinfamilies", "<i4"),
        ("skinindex", "<i4"),
        ("numbodyparts", "<i4"),
        ("bodypartindex", "<i4"),
        ("numlocalattachments", "<i4"),
        ("localattachmentindex", "<i4"),
        ("numlocalnodes", "<i4"),
        ("localnodeindex", "<i4"),
        ("localnodenameindex", "<i4"),
        ("numflexdesc", "<i4"),
        ("flexdescindex", "<i4"),
        ("numflexcontrollers", "<i4"),
        ("flexcontrollerindex", "<i4"),
        ("numflexrules", "<i4"),
        ("flexruleindex", "<i4"),
        ("numikchains", "<i4"),
        ("ikchainindex", "<i4"),
        ("nummouths", "<i4"),
        ("mouthindex", "<i4"),
        ("numlocalposeparameters", "<i4"),
        ("localposeparamindex", "<i4"),
        ("surfacepropindex", "<i4"),
        ("keyvalueindex", "<i4"),
        ("keyvaluesize", "<i4"),
        ("numlocalikautoplaylocks", "<i4"),
        ("localikautoplaylockindex", "<i4"),
        ("mass", "<f4"),
        ("contents", "<i4"),
        ("numincludemodels", "<i4"),
        ("includemodelindex", "<i4"),
        ("virtualmodel", "<i4"),
        ("szanimblocknameindex", "<i4"),
        ("numanimblocks", "<i4"),
        ("animblockindex", "<i4"),
        ("animblockmodel", "<i4"),
        ("bonetablebynameindex", "<i4"),
        ("vertexbase", "<i4"),
        ("indexbase", "<i4"),
        ("constdirectionallightdot", "u1"),
        ("rootlod", "u1"),
        ("numallowedrootlods", "u1"),
        ("unused0", "u1"),
        ("unused4", "<i4"),
        ("numflexcontrollerui", "<i4"),
        ("flexcontrolleruiindex", "<i4"),
        ("vertanimfixedpointscale", "<f4"),
        ("unused3", "<i4"),
        ("studiohdr2index", "<i4"),
        ("unused2", "<i4"),
    ]
)
STUDIOHDR2 = np.dtype(
    [
        ("numsrcbonetransform", "<i4"),
        ("srcbonetransformindex", "<i4"),
        ("illumpositionattachmentindex", "<i4"),
        ("maxeyedeflection", "<f4"),
        ("linearboneindex", "<i4"),
        ("sznameindex", "<i4"),
        ("boneflexdrivercount", "<i4"),
        ("boneflexdriverindex", "<i4"),
        ("reserved", "<i4", 56),
    ]
)
BONE = np.dtype(
    [
        ("sznameindex", "<i4"),
        ("parent", "<i4"),
        ("bonecontroller", "<i4", 6),
        ("pos", *V3),
        ("quat", "<f4", 4),
        ("rot", *V3),
        ("posscale", *V3),
        ("rotscale", *V3),
        ("posetobone", "<f4", (3, 4)),
        ("qalignment", "<f4", 4),
        ("flags", "<i4"),
        ("proctype", "<i4"),
        ("procindex", "<i4"),
        ("physicsbone", "<i4"),
        ("surfacepropidx", "<i4"),
        ("contents", "<i4"),
        ("unused", "<i4", 8),
    ]
)
BODYPART = np.dtype([("sznameindex", "<i4"), ("nummodels", "<i4"), ("base", "<i4"), ("modelindex", "<i4")])
MODEL = np.dtype(
    [
        ("name", "V64"),
        ("type", "<i4"),
        ("boundingradius", "<f4"),
        ("nummeshes", "<i4"),
        ("meshindex", "<i4"),
        ("numvertices", "<i4"),
        ("vertexindex", "<i4"),
        ("tangentsindex", "<i4"),
        ("numattachments", "<i4"),
        ("attachmentindex", "<i4"),
        ("numeyeballs", "<i4"),
        ("eyeballindex", "<i4"),
        ("vertexdata", "<i4", 2),
        ("unused", "<i4", 8),
    ]
)
MESH = np.dtype(
    [
        ("material", "<i4"),
        ("modelindex", "<i4"),
        ("numvertices", "<i4"),
        ("vertexoffset", "<i4"),
        ("numflexes", "<i4"),
        ("flexindex", "<i4"),
        ("materialtype", "<i4"),
        ("materialparam", "<i4"),
        ("meshid", "<i4"),
        ("center", *V3),
        ("vertexdata_ptr", "<i4"),
        ("numlodvertexes", "<i4", 8),
        ("unused", "<i4", 8),
    ]
)
TEXTURE = np.dtype(
    [
        ("sznameindex", "<i4"),
        ("flags", "<i4"),
        ("used", "<i4"),
        ("unused1", "<i4"),
        ("material", "<i4"),
        ("clientmaterial", "<i4"),
        ("unused", "<i4", 10),
    ]
)
ATTACHMENT = np.dtype(
    [("sznameindex", "<i4"), ("flags", "<u4"), ("localbone", "<i4"), ("local", "<f4", (3, 4)), ("unused", "<i4", 8)]
)
HITBOXSET = np.dtype([("sznameindex", "<i4"), ("numhitboxes", "<i4"), ("hitboxindex", "<i4")])
BBOX = np.dtype(
    [
        ("bone", "<i4"),
        ("group", "<i4"),
        ("bbmin", *V3),
        ("bbmax", *V3),
        ("szhitboxnameindex", "<i4"),
        ("unused", "<i4", 8),
    ]
)
MODELGROUP = np.dtype([("szlabelindex", "<i4"), ("sznameindex", "<i4")])
ANIMDESC = np.dtype(
    [
        ("baseptr", "<i4"),
        ("sznameindex", "<i4"),
        ("fps", "<f4"),
        ("flags", "<i4"),
        ("numframes", "<i4"),
        ("nummovements", "<i4"),
        ("movementindex", "<i4"),
        ("unused1", "<i4", 6),
        ("animblock", "<i4"),
        ("animindex", "<i4"),
        ("numikrules", "<i4"),
        ("ikruleindex", "<i4"),
        ("animblockikruleindex", "<i4"),
        ("numlocalhierarchy", "<i4"),
        ("localhierarchyindex", "<i4"),
        ("sectionindex", "<i4"),
        ("sectionframes", "<i4"),
        ("zeroframespan", "<i2"),
        ("zeroframecount", "<i2"),
        ("zeroframeindex", "<i4"),
        ("zeroframestalltime", "<f4"),
    ]
)
SEQDESC_HEAD = np.dtype(
    [
        ("baseptr", "<i4"),
        ("szlabelindex", "<i4"),
        ("szactivitynameindex", "<i4"),
        ("flags", "<i4"),
        ("activity", "<i4"),
        ("actweight", "<i4"),
        ("numevents", "<i4"),
        ("eventindex", "<i4"),
    ]
)
SEQDESC_SIZE = 212
SEQDESC_BLEND = np.dtype(  # at offset 56 of mstudioseqdesc_t
    [("numblends", "<i4"), ("animindexindex", "<i4"), ("movementindex", "<i4"), ("groupsize", "<i4", 2)]
)
EVENT = np.dtype([("cycle", "<f4"), ("event", "<i4"), ("type", "<i4"), ("options", "V64"), ("szeventindex", "<i4")])
ANIM_NODE = np.dtype([("bone", "u1"), ("flags", "u1"), ("nextoffset", "<i2")])
ANIM_SECTION = np.dtype([("animblock", "<i4"), ("animindex", "<i4")])
FLEXDESC = np.dtype([("szfacsindex", "<i4")])
FLEX = np.dtype(
    [
        ("flexdesc", "<i4"),
        ("target", "<f4", 4),
        ("numverts", "<i4"),
        ("vertindex", "<i4"),
        ("flexpair", "<i4"),
        ("vertanimtype", "u1"),
        ("unusedchar", "u1", 3),
        ("unused", "<i4", 6),
    ]
)
VERTANIM = np.dtype([("index", "<u2"), ("speed", "u1"), ("side", "u1"), ("delta", "<u2", 3), ("ndelta", "<u2", 3)])
VERTANIM_WRINKLE = np.dtype([*VERTANIM.descr, ("wrinkledelta", "<i2")])
FLEXCONTROLLER = np.dtype(
    [("sztypeindex", "<i4"), ("sznameindex", "<i4"), ("localtoglobal", "<i4"), ("min", "<f4"), ("max", "<f4")]
)
FLEXRULE = np.dtype([("flex", "<i4"), ("numops", "<i4"), ("opindex", "<i4")])
FLEXOP = np.dtype([("op", "<i4"), ("value", "<i4")])
EYEBALL = np.dtype(
    [
        ("sznameindex", "<i4"),
        ("bone", "<i4"),
        ("org", *V3),
        ("zoffset", "<f4"),
        ("radius", "<f4"),
        ("up", *V3),
        ("forward", *V3),
        ("texture", "<i4"),
        ("unused1", "<i4"),
        ("iris_scale", "<f4"),
        ("unused2", "<i4"),
        ("upperflexdesc", "<i4", 3),
        ("lowerflexdesc", "<i4", 3),
        ("uppertarget", "<f4", 3),
        ("lowertarget", "<f4", 3),
        ("upperlidflexdesc", "<i4"),
        ("lowerlidflexdesc", "<i4"),
        ("unused", "<i4", 4),
        ("nonfacs", "u1"),
        ("unused3", "u1", 3),
        ("unused4", "<i4", 7),
    ]
)
EYEBALL_HEAD = np.dtype([("sznameindex", "<i4"), ("bone", "<i4"), ("org", *V3), ("zoffset", "<f4"), ("radius", "<f4")])
EYEBALL_SIZE = 172

VVD_HEADER = np.dtype(
    [
        ("id", "S4"),
        ("version", "<i4"),
        ("checksum", "<i4"),
        ("numlods", "<i4"),
        ("numlodvertexes", "<i4", 8),
        ("numfixups", "<i4"),
        ("fixuptablestart", "<i4"),
        ("vertexdatastart", "<i4"),
        ("tangentdatastart", "<i4"),
    ]
)
VVD_VERTEX = np.dtype(
    [("weights", "<f4", 3), ("bones", "i1", 3), ("numbones", "u1"), ("pos", *V3), ("normal", *V3), ("uv", "<f4", 2)]
)
VVD_FIXUP = np.dtype([("lod", "<i4"), ("sourcevertexid", "<i4"), ("numvertexes", "<i4")])

# VTX is #pragma pack(1): no padding anywhere.
VTX_HEADER = np.dtype(
    [
        ("version", "<i4"),
        ("vertcachesize", "<i4"),
        ("maxbonesperstrip", "<u2"),
        ("maxbonespertri", "<u2"),
        ("maxbonespervert", "<i4"),
        ("checksum", "<i4"),
        ("numlods", "<i4"),
        ("materialreplacementlistoffset", "<i4"),
        ("numbodyparts", "<i4"),
        ("bodypartoffset", "<i4"),
    ]
)
VTX_BODYPART = np.dtype([("nummodels", "<i4"), ("modeloffset", "<i4")])
VTX_MODEL = np.dtype([("numlods", "<i4"), ("lodoffset", "<i4")])
VTX_LOD = np.dtype([("nummeshes", "<i4"), ("meshoffset", "<i4"), ("switchpoint", "<f4")])
VTX_MESH = np.dtype([("numstripgroups", "<i4"), ("stripgroupheaderoffset", "<i4"), ("flags", "u1")])
_STRIPGROUP_FIELDS = [
    ("numverts", "<i4"),
    ("vertoffset", "<i4"),
    ("numindices", "<i4"),
    ("indexoffset", "<i4"),
    ("numstrips", "<i4"),
    ("stripoffset", "<i4"),
    ("flags", "u1"),
]
_STRIP_FIELDS = [
    ("numindices", "<i4"),
    ("indexoffset", "<i4"),
    ("numverts", "<i4"),
    ("vertoffset", "<i4"),
    ("numbones", "<i2"),
    ("flags", "u1"),
    ("numbonestatechanges", "<i4"),
    ("bonestatechangeoffset", "<i4"),
]
_TOPOLOGY = [("numtopologyindices", "<i4"), ("topologyoffset", "<i4")]
# Headers grew by a topology pair in later v49 games; which one a file uses is read from its layout (§1.12).
VTX_STRIPGROUP = {25: np.dtype(_STRIPGROUP_FIELDS), 33: np.dtype(_STRIPGROUP_FIELDS + _TOPOLOGY)}
VTX_STRIP = {25: np.dtype(_STRIP_FIELDS), 33: np.dtype(_STRIP_FIELDS + _TOPOLOGY)}
VTX_VERTEX = np.dtype(
    [("boneweightindex", "u1", 3), ("numbones", "u1"), ("origmeshvertid", "<u2"), ("boneid", "i1", 3)]
)
STRIP_IS_TRILIST = 0x01


# --- Titanfall (Respawn) models -------------------------------------------------------------------------------
# v52 (Titanfall) keeps every field this importer reads where 44–49 have it: the header's unused slots hold a
# fade distance and the offset of Maya strings, the bone's unused tail holds a surface-property lookup and two
# unknown vectors, the animation descriptor's unused1 holds IK offsets. v53 (Titanfall 2) moves things: the
# header gains a name offset at 12, drops the animation-block fields, takes studiohdr2_t's fields inline and ends
# with the offsets and sizes of the VTX, VVD, VVC and PHY data embedded in the .mdl; bones grow by 28 bytes (a
# scale vector before posscale and one after rotscale, two ints at the end); textures shrink to 44 bytes;
# animation descriptors lose the animation block (92 bytes); sequences grow by 20 bytes (232).

STUDIOHDR53 = np.dtype(
    [
        *fields_between(STUDIOHDR, "id", "checksum"),
        ("sznameindex", "<i4"),  # absolute offset of the full model name
        *fields_between(STUDIOHDR, "name", "ikchainindex"),
        ("numrui", "<i4"),  # Respawn UI meshes, where 44–49 keep mouths
        ("ruiindex", "<i4"),
        *fields_between(STUDIOHDR, "numlocalposeparameters", "virtualmodel"),
        ("bonetablebynameindex", "<i4"),
        *fields_between(STUDIOHDR, "constdirectionallightdot", "unused0"),
        ("fadedistance", "<f4"),
        *fields_between(STUDIOHDR, "numflexcontrollerui", "flexcontrolleruiindex"),
        ("vertexbase", "<i4"),
        ("indexbase", "<i4"),
        ("mayaindex", "<i4"),
        *fields_between(STUDIOHDR2, "numsrcbonetransform", "illumpositionattachmentindex"),
        ("linearboneindex", "<i4"),
        ("boneflexdrivercount", "<i4"),
        ("boneflexdriverindex", "<i4"),
        ("pertriindex", "<i4"),
        ("pertricounts", "<i4", 3),
        ("unkstringindex", "<i4"),
        ("vtxindex", "<i4"),  # the embedded sidecars: offsets, then sizes, in this order
        ("vvdindex", "<i4"),
        ("vvcindex", "<i4"),
        ("phyindex", "<i4"),
        ("vtxsize", "<i4"),
        ("vvdsize", "<i4"),
        ("vvcsize", "<i4"),
        ("physize", "<i4"),
        ("unksectionindex", "<i4"),
        ("numunksections", "<i4"),
        ("unknown", "<i4", 2),
        ("reserved", "<i4", 60),
    ]
)
EMBEDDED_53 = ("vtx", "vvd", "vvc", "phy")  # header order of the embedded sections
BONE53 = np.dtype(
    [
        *fields_between(BONE, "sznameindex", "rot"),
        ("scale", *V3),  # (1, 1, 1) on real bones; Crowbar calls it unkVector
        *fields_between(BONE, "posscale", "rotscale"),
        ("scalescale", *V3),  # Crowbar's unkVector1
        *fields_between(BONE, "posetobone", "contents"),
        ("surfaceproplookup", "<i4"),
        ("unk", "<i4"),
        ("unused", "<i4", 7),
    ]
)
TEXTURE53 = np.dtype([*fields_between(TEXTURE, "sznameindex", "clientmaterial"), ("unused", "<i4", 5)])
ANIMDESC53 = np.dtype(
    [
        *fields_between(ANIMDESC, "baseptr", "movementindex"),
        ("compressedikerrorindex", "<i4"),
        *fields_between(ANIMDESC, "animindex", "ikruleindex"),
        *fields_between(ANIMDESC, "numlocalhierarchy", "zeroframestalltime"),
        ("unused", "<i4", 5),
    ]
)
SEQDESC53_SIZE = 232

VVC_HEADER = np.dtype(
    [
        ("id", "S4"),
        ("version", "<i4"),
        ("checksum", "<i4"),
        ("numlods", "<i4"),
        ("numlodvertexes", "<i4", 8),
        ("colordatastart", "<i4"),  # RGBA8 per vertex
        ("uv2datastart", "<i4"),  # a second UV set, float32 pairs
        ("unused", "<i4", 2),
    ]
)


@dataclass(frozen=True)
class MdlLayout:
    """The record layouts one MDL version uses; fields this importer reads keep their names in every layout."""

    header: np.dtype
    bone: np.dtype
    texture: np.dtype
    animdesc: np.dtype
    seqdesc_size: int


LAYOUT_44 = MdlLayout(STUDIOHDR, BONE, TEXTURE, ANIMDESC, SEQDESC_SIZE)
LAYOUTS = {v: LAYOUT_44 for v in (44, 45, 46, 47, 48, 49, 52)} | {
    53: MdlLayout(STUDIOHDR53, BONE53, TEXTURE53, ANIMDESC53, SEQDESC53_SIZE)
}

for _dtype, _size in (
    (STUDIOHDR, 408),
    (STUDIOHDR2, 256),
    (BONE, 216),
    (BODYPART, 16),
    (MODEL, 148),
    (MESH, 116),
    (TEXTURE, 64),
    (ATTACHMENT, 92),
    (HITBOXSET, 12),
    (BBOX, 68),
    (MODELGROUP, 8),
    (ANIMDESC, 100),
    (VVD_HEADER, 64),
    (VVD_VERTEX, 48),
    (VVD_FIXUP, 12),
    (VTX_HEADER, 36),
    (VTX_BODYPART, 8),
    (VTX_MODEL, 8),
    (VTX_LOD, 12),
    (VTX_MESH, 9),
    (VTX_STRIPGROUP[25], 25),
    (VTX_STRIPGROUP[33], 33),
    (VTX_STRIP[25], 27),
    (VTX_STRIP[33], 35),
    (VTX_VERTEX, 9),
    (EVENT, 80),
    (ANIM_NODE, 4),
    (ANIM_SECTION, 8),
    (FLEX, 60),
    (VERTANIM, 16),
    (VERTANIM_WRINKLE, 18),
    (FLEXCONTROLLER, 20),
    (FLEXRULE, 12),
    (FLEXOP, 8),
    (EYEBALL, 172),
    (STUDIOHDR53, 716),
    (BONE53, 244),
    (TEXTURE53, 44),
    (ANIMDESC53, 92),
    (VVC_HEADER, 64),
):
    assert _dtype.itemsize == _size, (_dtype, _size)
assert STUDIOHDR.fields["surfacepropindex"][1] == 308 and STUDIOHDR.fields["studiohdr2index"][1] == 400
assert MESH.fields["numlodvertexes"][1] == 52 and BONE.fields["posetobone"][1] == 96
assert STUDIOHDR53.fields["numbones"][1] == 160 and STUDIOHDR53.fields["vtxindex"][1] == 428
assert STUDIOHDR53.fields["bonetablebynameindex"][1] == 352 and STUDIOHDR53.fields["mayaindex"][1] == 380
assert BONE53.fields["posetobone"][1] == 120 and BONE53.fields["flags"][1] == 184
assert ANIMDESC53.fields["animindex"][1] == 32 and ANIMDESC53.fields["sectionindex"][1] == 52
