"""Format readers. Nothing in this package imports ``bpy``."""
