"""What the import and export operators share in their user interface: option sections in the file browser's
sidebar, and warnings both listed in the Info log and folded for the status bar."""

from __future__ import annotations

import bpy

from ..errors import fold

Sections = tuple[tuple[str, tuple[str, ...]], ...]  # (title, property names) of each sidebar section


def draw_panel(layout: bpy.types.UILayout, operator: bpy.types.Operator, title: str, props: tuple[str, ...]) -> None:
    """A collapsible options section in the file browser sidebar (UILayout.panel, 4.1+)."""
    header, body = layout.panel(f"IO_MS3D_MDL_{operator.bl_idname}_{title}", default_closed=False)
    header.label(text=title)
    if body:
        for prop in props:
            body.prop(operator, prop)


def draw_sections(layout: bpy.types.UILayout, operator: bpy.types.Operator, sections: Sections) -> None:
    """An operator's options, one collapsible section each, labels beside their values."""
    layout.use_property_split = True
    layout.use_property_decorate = False
    for title, props in sections:
        draw_panel(layout, operator, title, props)


def section_order(sections: Sections) -> tuple[str, ...]:
    """Every property the sections show, in the order they show them."""
    return tuple(prop for _, props in sections for prop in props)


def report_warnings(operator: bpy.types.Operator, warnings: list[str], prefix: str = "") -> None:
    """Every warning in the Info log; the status bar shows them folded (warnings alike, one line with a count)."""
    for warning in warnings:
        operator.report({"INFO"}, f"{prefix}{warning}")
    for warning in fold(warnings):
        operator.report({"WARNING"}, f"{prefix}{warning}")
