"""The clinic's session loads none of the papers' reproduction; every engine answers the loop through one interface.

The shipped clinical protocols run the optics model: importing the session (``visiontune.session.engine``)
must not load any module of ``visiontune.reproduction`` (the GP stack, the acquisition rules, the GP
engines). The engines are registered by dotted name (:mod:`visiontune.refraction.engine_registry`) and
imported when a protocol first asks for them, and the GP protocols still run.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import subprocess
import sys

import numpy as np
import pytest

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription, SimulatedPatient
from visiontune.refraction import engine_registry, loop
from visiontune.refraction.engine_interface import Engine
from visiontune.refraction.loop import MemoryLog, PendingQuery, Refraction, SimulatedPresenter, make_engine
from visiontune.refraction.policies import MODEL_TYPES
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint

GP_STACK = ("visiontune.reproduction",)


def _loaded_after(code: str) -> list[str]:
    """The modules of the reproduction loaded in a fresh interpreter after running ``code``."""
    probe = f"import sys\n{code}\nprint('\\n'.join(m for m in sys.modules if m.startswith({GP_STACK!r})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.split()


def test_the_session_loads_none_of_the_gp_stack():
    assert _loaded_after("import visiontune.session.engine") == []


def test_an_optics_session_built_loads_none_of_the_gp_stack():
    code = (
        "from visiontune.refraction.loop import MemoryLog, Refraction\n"
        "from visiontune.refraction.protocol import load_protocol\n"
        "r = Refraction(MemoryLog(), load_protocol('clinical-sloan-compare'), seed=1)\n"
        "r.next_query()"
    )
    assert _loaded_after(code) == []


def test_a_gp_protocol_loads_the_gp_stack_when_built():
    """The probe above can see the stack: building the GP engine loads it."""
    code = (
        "from visiontune.refraction.loop import make_engine\n"
        "from visiontune.refraction.protocol import load_protocol\n"
        "from visiontune.refraction.start import StartingPoint\n"
        "make_engine(load_protocol('paper-ucb-ald'), StartingPoint(), 0)"
    )
    loaded = _loaded_after(code)
    assert "visiontune.reproduction.gp" in loaded and "visiontune.reproduction.acquisition.registry" in loaded


@pytest.mark.parametrize("name", ["paper-ucb-ald", "ts-ald"])
def test_the_gp_protocols_still_run(name):
    protocol = load_protocol(name)
    refraction = Refraction(MemoryLog(), protocol, seed=4, simulated=True)
    assert isinstance(refraction.engine, Engine) and refraction.engine.model_type == "gp"
    patient = SimulatedPatient(Prescription(-1.0, -0.5, protocol.search_space.axis_deg), seed=3)
    assert refraction.run(SimulatedPresenter(patient), max_steps=6) is None  # left open after 6 answers
    trials = refraction.trials()
    assert len(trials) == 6
    box = protocol.search_space
    for t in trials:
        assert box.sphere_d[0] <= t.lens.sphere_d <= box.sphere_d[1]
        assert box.cylinder_d[0] <= t.lens.cylinder_d <= box.cylinder_d[1]
        assert t.lens.axis_deg == box.axis_deg
    assert not refraction.waits_for_over_minus()
    result = refraction.finish()
    assert result["model"] == "gp" and result["trials_used"] == 6 and "over_minus_risk" not in result
    assert refraction.acuity_map()["axis_deg"] == box.axis_deg


def test_the_default_question_is_the_engines_letter():
    """An engine without other questions asks the letter :meth:`Engine.propose` draws from the letter stream."""
    protocol = load_protocol("ts-ald")
    engine = make_engine(protocol, StartingPoint(), 2)
    choice = engine.propose_question([], np.random.default_rng([2, 0, 0]), np.random.default_rng([2, 0, 4]))
    s, lens, info = make_engine(protocol, StartingPoint(), 2).propose([], np.random.default_rng([2, 0, 0]))
    assert choice.kind == "letter" and (choice.letter.s_logmar, choice.letter.lens) == (s, lens) and info is None
    pending = Refraction(MemoryLog(), protocol, seed=2).next_query()
    assert isinstance(pending, PendingQuery) and (pending.s_logmar, pending.lens) == (s, lens)


@pytest.mark.parametrize("name", ["paper-ucb-ald", "clinical-sloan", "clinical-sloan-compare"])
def test_every_registered_engine_implements_the_interface(name):
    engine = make_engine(load_protocol(name), StartingPoint(), 0)
    assert isinstance(engine, Engine) and not inspect.isabstract(type(engine))
    assert engine.model_type == load_protocol(name).model.type


def test_the_loop_asks_no_engine_its_type():
    source = inspect.getsource(loop.Refraction)
    assert "isinstance(self.engine" not in source and "getattr(self.engine" not in source


def test_an_unregistered_model_type_is_refused():
    protocol = load_protocol("clinical-sloan")
    odd = dataclasses.replace(protocol, model=dataclasses.replace(protocol.model, type="spline"))
    with pytest.raises(InvalidInputError, match=r"model\.type: no engine for 'spline'; expected one of optics"):
        make_engine(odd, StartingPoint(), 0)
    assert set(loop.engine_model_types()) == {"optics", "optics-gp", "gp"}


def test_each_engine_is_registered_by_dotted_name_and_imported_at_first_use():
    """The registry names every engine ``"module:attribute"``; resolving a name imports that module and
    the engines it builds answer for their model type; resolving the optics one loads no GP engine."""
    # the model types a protocol may name
    assert set(engine_registry.ENGINES) == set(loop.engine_model_types()) == set(MODEL_TYPES)
    for model_type, name in engine_registry.ENGINES.items():
        module, attribute = name.split(":")
        assert module.startswith("visiontune.") and attribute.isidentifier(), name
        assert engine_registry.engine_factory(model_type) is getattr(importlib.import_module(module), attribute)
    code = "from visiontune.refraction import engine_registry\nengine_registry.engine_factory('optics')"
    assert _loaded_after(code) == []
    loaded = _loaded_after(code + "\nengine_registry.engine_factory('optics-gp')")
    assert "visiontune.reproduction.engines.optics_gp_engine" in loaded
    assert "visiontune.reproduction.engines.gp_engine" not in loaded


def test_the_engines_say_through_the_interface_whether_they_keep_draws_of_the_correction():
    """The clinical validation reads the coverage of the credible region from the engine's weighted draws
    when it keeps them (the optics models), and from its estimate otherwise (the GP model), without
    asking the engine's type."""
    start = StartingPoint()
    assert make_engine(load_protocol("paper-ucb-ald"), start, 0).correction_draws([]) is None
    optics = make_engine(load_protocol("clinical-sloan"), start, 0)
    draws = optics.correction_draws([])
    assert draws is optics.posterior([]) and draws.theta.shape[0] == draws.weights.shape[0]
