"""session layer (see DESIGN.md)."""
