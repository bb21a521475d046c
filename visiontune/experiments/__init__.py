"""bench layer (docs/design.md, "Layers")."""
