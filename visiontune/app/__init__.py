"""app layer (see DESIGN.md)."""
