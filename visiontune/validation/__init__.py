"""The clinical validation (docs/design.md, "Layers"): simulated patients through the one trial loop
(``visiontune validate``), other answer models and lens devices, the near addition, mixed sessions,
the information bound of the precision stop, and the results store and parallel executor the
papers' reproduction (:mod:`visiontune.reproduction`) runs its sweeps on."""
