"""GoldSrc (Half-Life 1) models into the neutral scene. No ``bpy``."""
