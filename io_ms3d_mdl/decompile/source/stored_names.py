"""Every name the QC and SMDs carry, put back to the bytes the model stored (``formats.stored_text``): a name
stored in cp1252 or Latin-1 is written in it, one stored in UTF-8 in UTF-8, so the recompiled model holds the same
bytes. Only non-ASCII names are looked at (each once)."""

from __future__ import annotations

import dataclasses
from functools import lru_cache

from ...formats.source.model import MdlFile
from ...formats.stored_text import stored_name
from .details import ModelDetails


def restore_stored_names(mdl: MdlFile, details: ModelDetails) -> None:
    data = mdl.data

    @lru_cache(maxsize=4096)
    def stored(name: str) -> str:
        return stored_name(name, data)

    def each(names: list[str]) -> list[str]:
        return [stored(n) for n in names]

    mdl.name = stored(mdl.name)
    mdl.bone_names[:] = each(mdl.bone_names)
    mdl.textures[:] = each(mdl.textures)
    mdl.cd_materials[:] = each(mdl.cd_materials)
    mdl.include_models[:] = each(mdl.include_models)
    mdl.flex_names[:] = each(mdl.flex_names)
    mdl.flex_controllers[:] = [(stored(n), stored(t), lo, hi) for n, t, lo, hi in mdl.flex_controllers]
    for part in mdl.body_parts:
        part.name = stored(part.name)
        for model in part.models:
            model.name = stored(model.name)
    for attachment in mdl.attachments:
        attachment.name = stored(attachment.name)
    mdl.hitbox_sets = {stored(k): v for k, v in mdl.hitbox_sets.items()}
    for boxes in mdl.hitbox_sets.values():
        for box in boxes:
            box.name = stored(box.name)
    for animation in mdl.animations:
        animation.name = stored(animation.name)
    for i, seq in enumerate(mdl.sequences):
        for event in seq.events:
            event.name = stored(event.name)
        mdl.sequences[i] = dataclasses.replace(seq, name=stored(seq.name), activity=stored(seq.activity))
    details.surface_prop = stored(details.surface_prop)
    details.bone_surface_props[:] = each(details.bone_surface_props)
    details.nodes[:] = each(details.nodes)
    for p in details.pose_parameters:
        p.name = stored(p.name)
    for d in details.sequences:
        d.events = [(number, kind, stored(options)) for number, kind, options in d.events]
    for chain in details.ik_chains:
        chain.name = stored(chain.name)
    for key, eyes in details.eyeballs.items():
        details.eyeballs[key] = [(stored(name), record) for name, record in eyes]
