"""acquisition layer (see DESIGN.md)."""
