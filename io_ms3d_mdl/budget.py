"""Work budgets: how much one import may read and decode. No ``bpy``.

Every table of a hostile file can fit inside it and still ask for hours of work: records that all point at the
same table, frame counts no key data backs, textures of legal but absurd size. Each limit here is absolute
(scaled by the user's *Work Limit*) and, where a file's size says what it can honestly describe, relative to that
size too, with margins of 50–100× over the real files we know (see SECURITY.md). Going over one is a
``FormatError`` (:class:`BudgetExceeded`) that names the limit and the option that raises it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .errors import BudgetExceeded

OPTION = "raise the import's Work Limit (--work-limit) if the file is genuine"
MIB = 1 << 20
OUTPUT_FILE_COST = 4096  # bytes of output budget a decompile pays per file it creates (a few ms of work each)


@dataclass(frozen=True)
class Budget:
    """Limits at ``scale`` × their defaults. ``scale`` is the Work Limit the user chose (1 by default)."""

    scale: float = 1.0

    def _n(self, amount: float) -> int:
        return int(amount * max(self.scale, 0.0))

    @property
    def file_bytes(self) -> int:
        """Any one file read whole into memory (an import keeps a model's .mdl, .vvd, .vtx and .phy at once: at
        512 MiB each three took 1.3 GB; the largest real file has 2 MB)."""
        return self._n(128 * MIB)

    def table_bytes(self, file_size: int) -> int:
        """Bytes a reader may copy out of one file: each table is read about once, so sharing one table between
        thousands of records (a small file asking for gigabytes) is what this stops."""
        return self._n(8 * file_size + 16 * MIB)

    def bone_frames(self, data_bytes: int) -> int:
        """Frames × bones decoded over all animations of a model and its includes. Real models use under one
        per byte of animation data; a 100k-frame animation in a 20 KB file is not a real model. At most 8 M: 32 M
        took 27 s and 1.1 GB."""
        return self._n(min(max(1_000_000, 64 * data_bytes), 8_000_000))

    @property
    def events(self) -> int:
        """Animation events turned into markers, over all sequences (events may be shared between them)."""
        return self._n(100_000)

    @property
    def animation_bone_frames(self) -> int:
        """Frames × bones of one animation (decoded densely, in double precision, and turned into Blender's bone
        spaces: 4 M took 5 s and 0.9 GB; the longest real one has 16 k)."""
        return self._n(1_000_000)

    @property
    def animation_walk_bytes(self) -> int:
        """GoldSrc animation data walked by leaping, over one import: a channel's spans are a chain, and one of
        more than a hundred spans is followed through tables of about 12 bytes per byte of data it may cross
        (real channels hold a handful of spans and never leap)."""
        return self._n(16 * MIB)

    def resampled_keys(self, file_size: int) -> int:
        """Keys MilkShape resampling may add (beyond it the stored keys are kept as they are). Each costs about
        0.8 KB on its way to Blender: 7.9 M took 52 s and 4.6 GB, 0.9 M 5 s and 0.8 GB."""
        return self._n(min(max(500_000, 64 * file_size), 750_000))

    @property
    def animation_entries(self) -> int:
        """Animations a model offers in its list (a name and an entry each, built or not): a GoldSrc sequence
        offers one per blend, and a blend count is a number any file can hold (2³¹ took 2 GB in 4 s). The largest
        real offer is about 2,000 (a Source character with its includes)."""
        return self._n(20_000)

    @property
    def skin_entries(self) -> int:
        """Skin families × texture references: each entry becomes a material name in the model's skin table
        (about 385 bytes in Blender: 1,000 × 1,000 took 665 MB). Real tables have at most a few thousand."""
        return self._n(100_000)

    def output_bytes(self, input_bytes: int) -> int:
        """Bytes a decompile may write, given the bytes it read (model, companions, includes, sequence groups):
        every count that multiplies text (sequences × frames × bones, body parts × levels of detail, skin families)
        meets this before its bytes reach the disk, each file counting ``OUTPUT_FILE_COST`` more. Real models write
        at most about 50 bytes per byte read (scientist.mdl: 8.3 MB; civilian.mdl 20 MB from 0.85 MB). Text is
        written at 6–16 MB/s on a loaded machine, so the ceiling keeps the worst case near 10 s (a 137 KB model
        wrote 214 MB in 16 s before this budget; 20,000 files took 13.5 s). Animations add
        :meth:`animation_text_bytes`."""
        return self._n(min(16 * MIB + 32 * input_bytes, 64 * MIB))

    def animation_text_bytes(self, data_bytes: int) -> int:
        """Bytes of animation SMDs a decompile may write beyond ``output_bytes``, given the bytes of the files their
        animations come from. Animation data packs tighter than anything else (still channels cost nothing): a
        Counter-Strike player's 1,382 shared animations write 68 MB from 2.0 MB in 2–3 s, past the 64 MB above.
        Their memory stays flat (written a bounded batch at a time: 96 MB at the peak), so only time is at stake:
        at most 192 MB more, about 10–30 s."""
        return self._n(min(48 * data_bytes, 192 * MIB))

    @property
    def texture_pixels(self) -> int:
        """One decoded texture (larger ones use the largest mipmap that fits): 4096 × 4096."""
        return self._n(4096 * 4096)

    @property
    def import_pixels(self) -> int:
        """All decoded textures of one import."""
        return self._n(64 * MIB)

    @property
    def vertices(self) -> int:
        return self._n(1_000_000)

    @property
    def triangles(self) -> int:
        """Blender holds a triangle in about 0.6 KB (corners, edges, custom normals, UVs, the evaluated copy): a
        million took a GB (the largest real model has 27 k over all its levels of detail)."""
        return self._n(750_000)

    @property
    def meshes(self) -> int:
        """GoldSrc mesh records over all models, each walked on its own (studiomdl allows 32 a model, 32 models a
        body part): a million empty ones took 8 s."""
        return self._n(65_536)

    @property
    def shape_key_vertices(self) -> int:
        """Shape keys × vertices over all objects (each key stores every vertex)."""
        return self._n(16_000_000)

    @property
    def flex_rule_work(self) -> int:
        """Flex rule work over all objects, in units of about 2 µs (``scene/source/flex_rules.rule_cost``: one per
        operation and rule, more for the operations that build many terms): each object with shape keys runs every
        rule again, so a small file could ask for hours. A face has a few thousand units."""
        return max(16, self._n(2_000_000))  # (a tiny archive mounts at any Work Limit)

    # Datablocks and what hangs on them, per import: Blender makes each at a cost of its own, whatever the tables
    # above allowed, and some of it grows faster than their number (objects: 4,000 in 5 s, 20,000 in 105 s and
    # 1.4 GB). Real models have at most a few dozen objects and drivers, a few hundred properties, and a
    # character with its includes about 2,000 actions.

    @property
    def objects(self) -> int:
        """Objects, empties and collections."""
        return self._n(4_000)

    @property
    def shape_keys(self) -> int:
        """Blender's key blocks are a list each new one is named against: 20,000 took 7.5 s."""
        return self._n(10_000)

    @property
    def drivers(self) -> int:
        """Each reads properties by name, and Blender 4.2 finds a property by walking its object's list: 20,000
        chained flex rules took 72 s there (4 s on 5.0), 5,000 take seconds."""
        return self._n(5_000)

    @property
    def actions(self) -> int:
        """Each on an NLA track of its own, and Blender checks a new track's name against every other track's:
        10,000 actions took 12 s, 4,000 take under 4."""
        return self._n(4_000)

    @property
    def materials(self) -> int:
        """Materials (each with its node tree and image): 7,000 one-pixel GoldSrc textures took 165 s. Real models
        have at most a few hundred."""
        return self._n(1_000)

    @property
    def archive_entries(self) -> int:
        """Entries of one VPK directory: each is a few numbers in arrays, but its name is walked one Python step at
        a time (4 M took 7 s and 600 MB with the import). The largest real directories hold a few hundred
        thousand."""
        return max(16, self._n(2_000_000))  # (a tiny archive mounts at any Work Limit)

    @property
    def archive_folders(self) -> int:
        """Folders of one VPK directory (a folder counted once per extension it holds): each is a dict key and a
        node of the folder tree listings walk (1 M took 4 s of CPU and 600 MB). Real archives hold tens of
        thousands."""
        return max(16, self._n(250_000))

    @property
    def listed_models(self) -> int:
        """Models listed from the mounted games and archives (the game browser makes a row for each: 1 M rows took
        17.8 s and 1.9 GB, 200,000 took 12 s on a loaded machine). A large real game lists about 10,000."""
        return self._n(100_000)

    @property
    def search_paths(self) -> int:
        """Archives one import searches (the game's SearchPaths with every ``custom/*`` entry, the mounted games,
        the user's roots), all mounted and indexed before the first lookup (8,192 tiny ones took 6 s on a loaded
        machine); the folders searched beside them may be four times as many (each is listed once). A game
        mounts a few dozen; one ``custom/*`` line mounts at most 4,096."""
        return max(16, self._n(4_096))

    @property
    def custom_properties(self) -> int:
        """Custom properties on objects, empties, collections, bones, materials and actions (flex controllers and
        the flex weights other rules read among them). Blender 4.2 looks each up by walking the list: 100,000
        took 133 s there (4 s on 5.0)."""
        return self._n(20_000)

    def exceeded(
        self, path: str | os.PathLike[str] | None, what: str, amount: int, limit: int, unit: str = "", offset=None
    ) -> BudgetExceeded:
        unit = f" {unit}" if unit else ""
        return BudgetExceeded(
            path, offset, f"{what} of {amount:,}{unit} exceeds the work budget of {limit:,}{unit}; {OPTION}"
        )

    def check(
        self, path: str | os.PathLike[str] | None, what: str, amount: int, limit: int, unit: str = "", offset=None
    ) -> None:
        if amount > limit:
            raise self.exceeded(path, what, amount, limit, unit, offset)


DEFAULT = Budget()
_current: ContextVar[Budget | None] = ContextVar("io_ms3d_mdl_budget", default=None)


def current_budget() -> Budget:
    """The import's budget (the defaults outside an import)."""
    return _current.get() or DEFAULT


@contextmanager
def using_budget(budget: Budget) -> Iterator[Budget]:
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)
