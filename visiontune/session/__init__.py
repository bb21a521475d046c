"""session layer (docs/design.md, "Layers")."""
