"""gp layer (see DESIGN.md)."""
