"""Source models into the neutral scene: meshes, skeleton, animations, flexes, materials, collision. No ``bpy``."""
