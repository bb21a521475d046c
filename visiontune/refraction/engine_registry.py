"""The engines of the refraction loop, one per protocol ``model.type``, registered by dotted name.

Each entry names a factory ``(protocol, start, seed) -> Engine``
(:class:`~visiontune.refraction.engine_interface.Engine`) as ``"module:attribute"``; the module is
imported (:func:`importlib.import_module`) the first time a protocol asks for that model, so a
session of the optics model loads none of the GP stack, and the product imports nothing of the
papers' reproduction (:mod:`visiontune.reproduction`), whose two GP engines are registered here
by name:

* ``"optics"``: :func:`~visiontune.refraction.mixed_engine.build_optics_engine` (the clinical
  default: :class:`~visiontune.refraction.optics_engine.OpticsEngine`, or
  :class:`~visiontune.refraction.mixed_engine.MixedOpticsEngine` when the protocol asks
  comparisons or sliders);
* ``"optics-gp"``: :class:`~visiontune.reproduction.engines.optics_gp_engine.OpticsGPEngine`;
* ``"gp"``: :func:`~visiontune.reproduction.engines.gp_engine.build_gp_engine`, the probit GP
  model of Fauvel & Chalk (contextual BO) §5.

The loop asks the engine it gets only through the :class:`Engine` interface, never its type.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING

from visiontune.errors import InvalidInputError

if TYPE_CHECKING:
    from visiontune.refraction.engine_interface import Engine
    from visiontune.refraction.protocol import Protocol
    from visiontune.refraction.start import StartingPoint

__all__ = ["ENGINES", "engine_factory", "engine_model_types", "make_engine"]

#: ``model.type`` -> ``"module:attribute"`` of the factory ``(protocol, start, seed) -> Engine``.
ENGINES = MappingProxyType(
    {
        "optics": "visiontune.refraction.mixed_engine:build_optics_engine",
        "optics-gp": "visiontune.reproduction.engines.optics_gp_engine:OpticsGPEngine",
        "gp": "visiontune.reproduction.engines.gp_engine:build_gp_engine",
    }
)

_factories: dict[str, Callable] = {}


def engine_model_types() -> tuple[str, ...]:
    """The model types an engine is registered for (``model.type`` of a protocol)."""
    return tuple(ENGINES)


def engine_factory(model_type: str) -> Callable[..., Engine]:
    """The factory registered for ``model_type``, its module imported at the first call; an
    unregistered type raises :class:`~visiontune.errors.InvalidInputError` naming the known ones."""
    factory = _factories.get(model_type)
    if factory is not None:
        return factory
    name = ENGINES.get(model_type)
    if name is None:
        raise InvalidInputError(f"model.type: no engine for {model_type!r}; expected one of {', '.join(ENGINES)}")
    module, attribute = name.split(":")
    factory = _factories[model_type] = getattr(import_module(module), attribute)
    return factory


def make_engine(protocol: Protocol, start: StartingPoint, seed: int) -> Engine:
    """The engine of the protocol's model, built by the factory registered for ``model.type``
    (:data:`ENGINES`)."""
    return engine_factory(protocol.model.type)(protocol, start, seed)
