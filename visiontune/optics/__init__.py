"""optics layer (see DESIGN.md)."""
