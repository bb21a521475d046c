"""display layer (see DESIGN.md)."""
