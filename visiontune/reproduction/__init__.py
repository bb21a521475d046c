"""The reproduction of the papers behind VisionTune's GP model, apart from the clinic's product.

Fauvel & Chalk (contextual BO) and Fauvel & Chalk (binary/preferential BO): the Gaussian-process
stack (:mod:`~visiontune.reproduction.gp`), the acquisition rules and their registry
(:mod:`~visiontune.reproduction.acquisition`), the two GP engines of the refraction loop
(:mod:`~visiontune.reproduction.engines`, run by the protocols with ``model.type = "gp"`` and
``"optics-gp"``), the 34 benchmark functions, the sweeps, the papers' tables, the refraction
experiment and the projective-query experiment of Mikkola et al. 2020 (``visiontune bench``,
``visiontune simulate``, ``visiontune policies``). See README.md beside this file.

The product (``optics``, ``display``, ``devices``, ``refraction``, ``session``, ``report``, ``app``,
``instrument_files``, ``validation``) never imports this package: the loop reaches its engines by
their dotted names (:mod:`visiontune.refraction.engine_registry`), and this package imports the
product's modules it builds on (tests/test_layers.py keeps both rules).
"""
