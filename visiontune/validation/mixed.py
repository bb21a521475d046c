"""Mixed sessions in the bench: letters and comparisons through one model, headless.

A session that may ask "which is clearer, 1 or 2?" as well as a letter, run headless on
simulated patients through the one trial loop (:class:`~visiontune.refraction.loop.Refraction`
over a :class:`~visiontune.refraction.loop.MemoryLog`, the protocol's ``comparisons`` set to the
variant's :class:`~visiontune.refraction.mixed_rules.MixedSettings`): the same stopping rules,
estimates, result and keyed random streams as a clinical session. The simulated patient
answers comparisons with :func:`visiontune.optics.comparison_answers.answer_comparison_trial`, keyed by
``(seed, k)`` like its letters.

:func:`run_mixed_case` refracts one case of a population and scores it as
:func:`visiontune.validation.clinic.run_case` does, plus the number of letters and comparisons,
the patient's time (each answer counted at its setting's duration) and the error of the filed
lens after every answer (to compare sessions at equal answers or equal time).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from visiontune.errors import InvalidInputError, SessionError
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.loop import MemoryLog, Refraction, is_comparison
from visiontune.refraction.mixed_rules import MixedSettings
from visiontune.refraction.population import PatientCase
from visiontune.refraction.protocol import parse_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.validation.clinic import CaseResult, RunKeyLike, TimedPresenter, case_metrics

__all__ = ["MixedCaseSpec", "run_mixed_case"]


@dataclass(frozen=True)
class MixedCaseSpec:
    """One run: ``experiment``, the protocol (TOML text and name), a ``label`` for the variant
    (stored as the run's policy), the ``population`` and ``case``, the session's ``settings`` and
    the ``patient_comparison`` model the simulated patient answers with (default: the
    settings' model with the patient's own lapse rate)."""

    experiment: str
    protocol_text: str
    protocol_source: str
    label: str
    population: str
    case: PatientCase
    settings: MixedSettings
    patient_comparison: ComparisonModel | None = None

    @property
    def key(self) -> RunKeyLike:
        return RunKeyLike(self.experiment, self.population, self.label, self.case.case_id)


def run_mixed_case(spec: MixedCaseSpec) -> CaseResult:
    """Refract one simulated patient in a mixed session; the metrics of
    :func:`visiontune.validation.clinic.case_metrics` plus ``letters``, ``comparisons``,
    ``equal_answers``, ``patient_s`` and, after every answer, the error of the filed lens
    (``error_by_answer``, D) and the patient's time (``seconds_by_answer``, s)."""
    t0 = time.perf_counter()
    protocol = parse_protocol(spec.protocol_text, spec.protocol_source)
    case = spec.case
    try:
        start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    except InvalidInputError as exc:
        return CaseResult(spec.key, {"refused": str(exc)}, 0, time.perf_counter() - t0)
    if protocol.model.type != "optics":
        raise InvalidInputError(
            f"protocol: mixed sessions need the optics model, got model.type = {protocol.model.type!r}"
        )
    protocol = dataclasses.replace(protocol, comparisons=spec.settings)
    refraction = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
    patient = case.patient(protocol.n_alternatives)
    model = spec.patient_comparison or dataclasses.replace(spec.settings.comparison, lapse=patient.psychometric.lapse)
    presenter = TimedPresenter(patient, comparison_model=model)
    truth = case.true_rx.power_vector_array()
    errors: list[float] = []
    seconds: list[float] = []

    def track(_entry, r: Refraction) -> None:
        found = r.engine.filed_lens(r.engine.posterior(r.trials()))
        errors.append(float(np.linalg.norm(found.power_vector_array() - truth)))
        seconds.append(r.patient_seconds())

    result = refraction.run(presenter, progress=track)
    if result is None:  # pragma: no cover - run() without max_steps always finishes
        raise SessionError("the mixed session did not finish")
    m = case_metrics(refraction, result, case, patient, presenter.decision_s)
    valid = refraction.trials()
    n_comp = sum(is_comparison(t) for t in valid)
    m.update(
        {
            "letters": len(valid) - n_comp,
            "comparisons": n_comp,
            "equal_answers": sum(t.comparison == "=" for t in valid),
            "patient_s": refraction.patient_seconds(),
            "error_by_answer": errors,
            "seconds_by_answer": seconds,
        }
    )
    return CaseResult(spec.key, m, int(result["trials_used"]), time.perf_counter() - t0)
