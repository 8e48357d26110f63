"""MilkShape 3D files into the neutral scene: geometry, materials, the skeleton and its keys. No ``bpy``."""
