"""optics layer (docs/design.md, "Layers"): prescriptions and power vectors, blur, acuity and its
units, psychometric functions, simulated patients, the refraction problem's boxes."""

from visiontune.optics.acuity import AcuityModel, BlendowskeAcuity
from visiontune.optics.blur import blur_diopters, residual_power_vector
from visiontune.optics.patient import SimulatedPatient, probability_grid, random_true_rx
from visiontune.optics.prescription import PowerVector, Prescription
from visiontune.optics.psychometric import PsychometricFunction
from visiontune.optics.search_space import CONTEXT_BOX, SEARCH_BOX, Box

__all__ = [
    "AcuityModel",
    "BlendowskeAcuity",
    "blur_diopters",
    "residual_power_vector",
    "SimulatedPatient",
    "random_true_rx",
    "probability_grid",
    "PowerVector",
    "Prescription",
    "PsychometricFunction",
    "CONTEXT_BOX",
    "SEARCH_BOX",
    "Box",
]
