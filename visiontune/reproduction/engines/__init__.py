"""The refraction loop's GP engines (Fauvel & Chalk (contextual BO) §5): the paper's probit GP
(:mod:`~visiontune.reproduction.engines.gp_engine`, ``model.type = "gp"``) and the optics formula as
the prior mean of a probit GP (:mod:`~visiontune.reproduction.engines.optics_gp_engine`,
``model.type = "optics-gp"``), each an :class:`~visiontune.refraction.engine_interface.Engine`
registered by dotted name in :mod:`visiontune.refraction.engine_registry`."""
