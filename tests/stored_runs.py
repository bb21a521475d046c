"""Helpers of the tests that hold docs/results to the code: what a stored validation run still
checks on any machine, and a measured protocol variant differs from its base only where its page
says.

The stores themselves (``docs/results/*.sqlite``) are not in the repository: they are regenerated
by the commands of ``python docs/results/regenerate.py --list``. What the tests need of them is a
text fixture, ``tests/fixtures/stored_runs.json``: for each registered run (:data:`STORED_CASES`)
the final metrics its store holds (decision times aside) and its answers, written by
``python -m tests.record_stored_answers`` from the stores and a rerun that gives them to the last
bit.

What is promised where:

- **Same machine, same versions: bit for bit.** A case run twice gives the same metrics and the
  same trials, to the last bit (:func:`assert_runs_twice_alike`); a session rebuilt from its log
  mid-way asks and files what the uninterrupted one did (:func:`assert_resumes_alike`;
  both in tests/test_stored_runs_hold.py).
- **Another machine** (another CPU takes other SIMD paths in NumPy's loops and other OpenBLAS
  kernels, and rounds some last bits differently): a stored run's metrics (the ``clinic_runs``
  table keeps only the final figures of each case, not its answers; the fixture keeps both) are checked by
  :func:`assert_holds` in three ways that do not depend on those last bits:

  (a) *recomputed from the stored answers*: the run's answers, recorded with its metrics in
      ``tests/fixtures/stored_runs.json`` (written by ``python -m tests.record_stored_answers``, which
      first checks, on the recording CPU, that its rerun gives the store's metrics to the last bit),
      fed back through the model give the stored stop, filed lens and its errors, counts, lens
      changes, the patient's time and coverage exactly and the stored estimate within
      :data:`ESTIMATE_TOLERANCE_D` (1e-9 D);
  (b) *re-simulated*: the session rerun asks the stored questions (same lenses, letter sizes
      within 1e-9 logMAR, same answers) up to the first decision that another rounding could
      turn, and at least :data:`MIN_SAME_TRIALS` of them (or all, in a shorter session);
  (c) the answers recorded are the store's: their number, kinds and stop equal the stored
      metrics, read from text, on any machine.

Where a test passes a store's path (``assert_holds(RESULTS / name, ...)``) the path names the run
only: nothing is read from it.
"""

from __future__ import annotations

import dataclasses
import json
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from visiontune.optics import Prescription
from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.lenses import lens_changes
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter, is_comparison
from visiontune.refraction.mixed_rules import MixedSettings
from visiontune.refraction.protocol import Protocol, load_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.refraction.trial import Trial
from visiontune.validation import clinic, mixed
from visiontune.validation.clinic import case_metrics, plan, run_case, stored_metrics, validation_case
from visiontune.validation.mixed import MixedCaseSpec, run_mixed_case

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
#: The registered runs' stored metrics and recorded answers (module docstring).
ANSWERS = Path(__file__).with_name("fixtures") / "stored_runs.json"

#: How far the estimate recomputed from the stored answers may lie from the stored one (D, the
#: length of the difference of power vectors). The particle posterior's weights, resampling and
#: moves are float sums whose last bits follow the CPU's kernels: over the 15 stored runs held,
#: recomputed under OPENBLAS_CORETYPE=SkylakeX, Sandybridge, Prescott and with NumPy's AVX2/AVX-512
#: loops disabled, the estimate moved by at most 1.5e-15 D (python -m tests.record_stored_answers
#: --measure). 1e-9 D leaves six orders of magnitude to that and is 4e-9 of a 0.25 D lens step.
ESTIMATE_TOLERANCE_D = 1e-9

#: The fewest leading trials a re-simulated stored run must ask as it was recorded (b), whatever
#: its near-ties: the earliest drift seen on another CPU (the refraction benchmark's quick store, on an
#: AVX-512 machine) came after trial 9.
MIN_SAME_TRIALS = 5

#: Letter sizes of the same question agree to this (logMAR): a size from the chart is exact, a
#: size from a continuous optimum moves by the CPU's rounding.
SIZE_TOLERANCE_LOGMAR = 1e-9

#: A comparison's three-way rows of mixed sessions (benchmarks/comparisons.py): label -> (the
#: session's settings, the simulated patient's comparison model, None: the settings' own).
MIXED_LABELS = {
    "mixed, Eq. 11": (MixedSettings(comparison=ComparisonModel()), None),
    "mixed, blur model / Eq. 11 patient": (MixedSettings(comparison=ComparisonModel("blur")), ComparisonModel()),
    "mixed, inferred sensitivity (median 4), stop once κ is learned / blur patient": (
        MixedSettings(
            comparison=ComparisonModel(sensitivity_median=4.0, sensitivity_sigma=1.0), sensitivity_to_stop=0.5
        ),
        ComparisonModel("blur", lapse=0.02),
    ),
}


@dataclass(frozen=True)
class StoredCase:
    """One stored run: case ``case_id`` of ``population`` in ``experiment`` of the store
    ``docs/results/<store>``, refracted with ``protocol`` (a shipped name, or a ``.toml`` file of
    docs/results/protocols) under ``policy`` (the store's policy column: ``"evr"``, or a
    :data:`MIXED_LABELS` label for a mixed session of ``comparisons.sqlite``)."""

    store: str
    experiment: str
    protocol: str
    population: str
    case_id: int
    policy: str = "evr"

    @property
    def key(self) -> str:
        return f"{self.store}/{self.experiment}/{self.population}/{self.policy}/{self.case_id}"

    @property
    def mixed(self) -> bool:
        return self.policy in MIXED_LABELS

    def load_protocol(self) -> Protocol:
        on_page = self.protocol.endswith(".toml")
        return load_protocol(str(RESULTS / "protocols" / self.protocol) if on_page else self.protocol)

    def stored(self) -> dict:
        """The metrics the store holds for this run (decision times aside), as the fixture keeps them."""
        return dict(stored_answers(self)["metrics"])

    def stored_in(self, results: Path = RESULTS) -> dict:
        """The metrics of this run in its store in the folder ``results`` (a regenerated
        docs/results), decision times included; a clear error when the store is not there."""
        path = results / self.store
        if not path.is_file():
            command = f"python docs/results/regenerate.py {self.store.removesuffix('.sqlite')}"
            raise FileNotFoundError(f"{path}: no such store; regenerate it with {command}")
        runs = stored_metrics(path, self.population, self.policy, self.experiment)
        if not runs:  # a store regenerated from a protocol file names its experiment after the file's protocol
            runs = stored_metrics(path, self.population, self.policy)
        if self.case_id not in runs:
            raise KeyError(f"{path}: no run of {self.key}")
        return runs[self.case_id]

    def run(self) -> tuple[dict, list]:
        """The run rerun as ``visiontune validate`` (or benchmarks/comparisons.py) ran it:
        its metrics and its trials."""
        with _kept_logs() as logs:
            if self.mixed:
                protocol, settings, patient_model = self._mixed()
                case = validation_case(self.population, self.case_id, 1)
                spec = MixedCaseSpec(
                    self.experiment,
                    protocol.source_text,
                    protocol.source,
                    self.policy,
                    self.population,
                    case,
                    settings,
                    patient_model,
                )
                metrics = run_mixed_case(spec).metrics
            else:
                spec = plan(self.experiment, self.load_protocol(), [self.policy], self.population, self.case_id + 1, 1)
                metrics = run_case(spec[self.case_id]).metrics
        (log,) = logs
        return metrics, log.trials(include_void=True)

    def _mixed(self) -> tuple[Protocol, MixedSettings, ComparisonModel | None]:
        protocol = self.load_protocol()
        settings, patient_model = MIXED_LABELS[self.policy]
        return dataclasses.replace(protocol, comparisons=settings), settings, patient_model

    def session(self, log) -> tuple[Refraction, SimulatedPresenter]:
        """The session of this run over ``log`` (fresh, or holding answers already given: a
        session rebuilt from its log) and its simulated patient, as the run's runner builds them."""
        protocol, settings, patient_model = self._mixed() if self.mixed else (self.load_protocol(), None, None)
        case = validation_case(self.population, self.case_id, 1)
        refraction = Refraction(
            log,
            protocol,
            seed=case.seed,
            simulated=True,
            start=StartingPoint(case.start_rx, case.start_source, case.age_years),
        )
        patient = case.patient(protocol.n_alternatives)
        own = settings and dataclasses.replace(settings.comparison, lapse=patient.psychometric.lapse)
        model = patient_model or own  # benchmarks/comparisons.py's patient, else the settings' at its lapse
        return refraction, SimulatedPresenter(patient, comparison_model=model)

    def recompute(self, trials: list[dict], stopped_by: str) -> tuple[dict, Refraction]:
        """The metrics of the run computed from its recorded ``trials`` (no question proposed):
        the log refilled, the model fitted to it, the result filed as ``stopped_by``."""
        log = MemoryLog()
        for index, t in enumerate(trials):
            log.record(Trial(index, **_trial_arguments(t)))
        refraction, presenter = self.session(log)
        result = refraction.result(stopped_by)
        case = validation_case(self.population, self.case_id, 1)
        metrics = case_metrics(refraction, result, case, presenter.patient, [])
        if self.mixed:
            valid = refraction.trials()
            n_comp = sum(is_comparison(t) for t in valid)
            metrics.update(
                {
                    "letters": len(valid) - n_comp,
                    "comparisons": n_comp,
                    "equal_answers": sum(t.comparison == "=" for t in valid),
                }
            )
        return metrics, refraction


@contextmanager
def _kept_logs():
    """Within: every :class:`MemoryLog` the clinic and mixed runners open is kept in the list
    yielded (run_case and run_mixed_case keep theirs to themselves)."""
    logs: list[MemoryLog] = []

    class KeptLog(MemoryLog):
        def __init__(self) -> None:
            super().__init__()
            logs.append(self)

    saved = clinic.MemoryLog, mixed.MemoryLog
    clinic.MemoryLog = mixed.MemoryLog = KeptLog
    try:
        yield logs
    finally:
        clinic.MemoryLog, mixed.MemoryLog = saved


def _rx(rx: Prescription | None) -> list[float] | None:
    return None if rx is None else [rx.sphere_d, rx.cylinder_d, rx.axis_deg]


def trial_record(t) -> dict:
    """A logged trial as JSON (floats round-trip exactly): what was asked and answered."""
    return {
        "s_logmar": t.s_logmar,
        "lens": _rx(t.lens),
        "letter_shown": t.letter_shown,
        "correct": t.correct,
        "letter_named": t.letter_named,
        "lens2": _rx(t.lens2),
        "comparison": t.comparison,
        "slider_knob": t.slider_knob,
        "slider_lenses": None if t.slider_lenses is None else [_rx(x) for x in t.slider_lenses],
        "slider_choice": t.slider_choice,
        "line_correct": t.line_correct,
        "void": t.void,
    }


def _trial_arguments(t: dict) -> dict:
    if t["void"]:
        raise AssertionError("stored answers with a voided trial: the recorder keeps only finished, valid runs")

    def rx(v):
        return None if v is None else Prescription(*v)

    return {
        "s_logmar": t["s_logmar"],
        "lens": rx(t["lens"]),
        "letter_shown": t["letter_shown"],
        "correct": t["correct"],
        "letter_named": t["letter_named"],
        "lens2": rx(t["lens2"]),
        "comparison": t["comparison"],
        "slider_knob": t["slider_knob"],
        "slider_choice": t["slider_choice"],
        "line_correct": t["line_correct"],
        "slider_lenses": None if t["slider_lenses"] is None else tuple(rx(x) for x in t["slider_lenses"]),
    }


#: A trial's fields as :func:`trial_record` gives them, with the value the answers file leaves out.
TRIAL_DEFAULTS = {
    "letter_named": None,
    "lens2": None,
    "comparison": None,
    "slider_knob": None,
    "slider_lenses": None,
    "slider_choice": None,
    "line_correct": None,
    "void": False,
}


def compact_trial(t: dict) -> dict:
    """``t`` without the fields at their :data:`TRIAL_DEFAULTS` (as the answers file keeps it)."""
    return {k: v for k, v in t.items() if k not in TRIAL_DEFAULTS or v != TRIAL_DEFAULTS[k]}


def read_answers() -> dict:
    """Every run's stored metrics and recorded answers (``tests/fixtures/stored_runs.json``), each
    trial's fields complete."""
    answers = json.loads(ANSWERS.read_text())
    for run in answers.values():
        run["trials"] = [{**TRIAL_DEFAULTS, **t} for t in run["trials"]]
    return answers


def stored_answers(case: StoredCase) -> dict:
    """The recorded run of ``case``: ``trials``, ``stopped_by``, ``robust_prefix`` and the stored ``metrics``."""
    answers = read_answers()
    assert case.key in answers, f"{case.key}: no recorded answers; run python -m tests.record_stored_answers"
    return answers[case.key]


def without_times(metrics: dict) -> dict:
    """A run's metrics without its decision times (wall clock, never the same twice)."""
    return {k: v for k, v in metrics.items() if k != "decision_ms"}


def as_stored(run: dict, stored: dict) -> dict:
    """``run``'s metrics that ``stored`` holds, decision times aside: a store written before a
    metric was kept (``lens_changes``) replays on the metrics it holds. Every key stored must be in
    ``run``."""
    missing = set(stored) - set(run)
    assert not missing, f"metrics stored but no longer computed: {sorted(missing)}"
    return without_times({k: run[k] for k in stored})


#: Metrics computed from the estimate itself (a continuous figure of the posterior), compared
#: within :data:`ESTIMATE_TOLERANCE_D`; the rest (counts, the filed lens on its steps and its
#: errors, coverage, the case's own figures) must equal the store's.
ESTIMATE_METRICS = ("exact_error_d",)
#: Metrics traced per answer during the run, not recomputed from the final log.
TRACED_METRICS = ("decision_ms", "error_by_answer", "seconds_by_answer")


def assert_answers_are_the_stores(case: StoredCase, answers: dict, stored: dict) -> None:
    """(c) The recorded answers belong to the stored run: their count, kinds, lens changes and
    (priced sessions) the patient's time equal the stored metrics."""
    valid = [t for t in answers["trials"] if not t["void"]]
    assert len(valid) == stored["answers"] and answers["stopped_by"] == stored["stopped_by"], case.key
    for name, count in (
        ("comparisons", sum(t["comparison"] is not None for t in valid)),
        ("sliders", sum(t["slider_choice"] is not None for t in valid)),
    ):
        if name in stored:
            assert count == stored[name], (case.key, name)


def assert_recomputes(case: StoredCase, answers: dict, stored: dict) -> dict:
    """(a) The stored answers fed back through the model give the stored figures; return the
    recomputed metrics."""
    again, refraction = case.recompute(answers["trials"], answers["stopped_by"])
    assert refraction.stop_reason() == stored["stopped_by"], case.key  # the same rule stops the same log
    if "lens_changes" in stored:
        assert lens_changes(refraction.trials()) == stored["lens_changes"], case.key
    for key, value in without_times(stored).items():
        if key in TRACED_METRICS:
            continue
        if key in ESTIMATE_METRICS:
            assert abs(again[key] - value) <= ESTIMATE_TOLERANCE_D, (case.key, key, again[key], value)
        elif isinstance(value, float):
            assert again[key] == _approx(value), (case.key, key, again[key], value)
        else:
            assert again[key] == value, (case.key, key, again[key], value)
    if "error_by_answer" in stored:
        assert stored["error_by_answer"][-1] == _approx(again["error_d"]), case.key
    return again


def _approx(value: float):
    """A figure of the filed lens (on its steps) and the case: the same arithmetic on the same
    inputs, within a few ulps of a norm's or a log's rounding."""
    return pytest.approx(value, rel=1e-12, abs=1e-12)


def same_question(a: dict, b: dict) -> bool:
    """Whether two trials asked the same question and got the same answer: the lenses and kinds
    equal, the letter sizes within :data:`SIZE_TOLERANCE_LOGMAR`."""
    if abs(a["s_logmar"] - b["s_logmar"]) > SIZE_TOLERANCE_LOGMAR:
        return False
    return {k: v for k, v in a.items() if k != "s_logmar"} == {k: v for k, v in b.items() if k != "s_logmar"}


def same_prefix(a: list[dict], b: list[dict]) -> int:
    """How many leading trials of ``a`` and ``b`` asked the same question (:func:`same_question`)."""
    n = 0
    for x, y in zip(a, b):
        if not same_question(x, y):
            break
        n += 1
    return n


def assert_resimulates(case: StoredCase, answers: dict, rerun_trials: list) -> int:
    """(b) The rerun asks the recorded questions at least up to the recorded first near-tie
    (``answers["robust_prefix"]``, the trials before the first decision another rounding can
    turn) and never fewer than :data:`MIN_SAME_TRIALS`; return the trials in common."""
    recorded = answers["trials"]
    rerun = [trial_record(t) for t in rerun_trials]
    common = same_prefix(recorded, rerun)
    must = min(len(recorded), max(MIN_SAME_TRIALS, answers["robust_prefix"]))
    assert common >= must, f"{case.key}: the rerun leaves the stored questions at trial {common} (< {must})"
    return common


def assert_runs_twice_alike(case: StoredCase) -> None:
    """Same machine, same versions: the case run twice gives the same metrics (decision times
    aside) and the same trials, to the last bit."""
    first, first_trials = case.run()
    second, second_trials = case.run()
    assert without_times(first) == without_times(second), case.key
    assert [trial_record(t) for t in first_trials] == [trial_record(t) for t in second_trials], case.key


def assert_resumes_alike(case: StoredCase, at: int) -> None:
    """Same machine, same versions: the session stopped after ``at`` answers (the process
    killed) and rebuilt from its log asks, hears and files what the uninterrupted one did."""
    whole, presenter = case.session(MemoryLog())
    uninterrupted = whole.run(presenter)
    log = MemoryLog()
    first, presenter = case.session(log)
    assert first.run(presenter, max_steps=at) is None and len(log.trials()) == at, case.key
    rebuilt, presenter = case.session(log)  # a new engine over the same log
    resumed = rebuilt.run(presenter)
    assert [trial_record(t) for t in log.trials(True)] == [trial_record(t) for t in whole.trials(True)], case.key
    assert {**resumed, "duration_s": None} == {**uninterrupted, "duration_s": None}, case.key


def assert_holds(
    store: Path, experiment: str, protocol: Protocol, population: str, case_id: int, *, policy: str = "evr"
) -> dict:
    """What the stored run of case ``case_id`` of ``population`` (``experiment`` of ``store``,
    run with ``protocol``, base protocol of a mixed ``policy``) still checks on any machine
    (module docstring: (a), (b), (c)); return the stored metrics."""
    case = stored_case(store.name, experiment, population, case_id, policy)
    assert case.load_protocol() == protocol, f"{case.key}: registered with another protocol"
    stored = case.stored()
    answers = stored_answers(case)
    assert_answers_are_the_stores(case, answers, stored)
    assert_recomputes(case, answers, stored)
    metrics, trials = case.run()
    assert set(stored) <= set(metrics), f"{case.key}: metrics stored but no longer computed"
    assert_resimulates(case, answers, trials)
    return stored


def same_but_criterion(variant: Protocol, base: Protocol, *, filed_lens: bool = False) -> bool:
    """Whether ``variant`` is ``base`` with another ``comparisons.criterion`` and nothing else (its
    name, description and source aside); with ``filed_lens``, its ``model.filed_lens`` may differ
    too (a variant measured before its base filed the most probable lens)."""
    comparisons = dataclasses.replace(variant.comparisons, criterion=base.comparisons.criterion)
    model = dataclasses.replace(variant.model, filed_lens=base.model.filed_lens) if filed_lens else variant.model
    same = dataclasses.replace(
        variant,
        comparisons=comparisons,
        model=model,
        name=base.name,
        description=base.description,
        source=base.source,
        source_text=base.source_text,
    )
    return same == base


#: Every stored run the tests hold to its store (the callers name theirs by these).
STORED_CASES = {
    c.key: c
    for c in [
        StoredCase("clinical-validation.sqlite", "clinical-sloan-seed1", "clinical-sloan", "adult-clinic", 0),
        StoredCase("clinical-validation.sqlite", "clinical-sloan-seed1", "clinical-sloan", "adult-clinic", 1),
        *(
            StoredCase(
                "comparisons.sqlite", "clinical-sloan-seed1-comparisons", "clinical-sloan", "adult-clinic", 0, label
            )
            for label in MIXED_LABELS
        ),
        StoredCase(
            "clinical-validation-clinical-sloan-compare.sqlite",
            "clinical-sloan-compare-seed1",
            "clinical-sloan-compare",
            "adult-clinic",
            2,
        ),
        StoredCase(
            "clinical-validation-clinical-sloan-compare.sqlite",
            "clinical-sloan-compare-seed1",
            "clinical-sloan-compare",
            "young",
            0,
        ),
        StoredCase(
            "clinical-validation-clinical-sloan-compare-phoropter.sqlite",
            "clinical-sloan-compare-seed1",
            "clinical-sloan-compare-phoropter.toml",
            "young",
            0,
        ),
        StoredCase(
            "clinical-validation-clinical-sloan-compare-sliders-evr-stop.sqlite",
            "clinical-sloan-compare-sliders-evr-stop-seed1",
            "clinical-sloan-compare-sliders-evr-stop.toml",
            "adult-clinic",
            3,
        ),
        *(
            StoredCase(
                "clinical-validation-clinical-sloan-compare-trial-frame.sqlite",
                "clinical-sloan-compare-trial-frame-seed1",
                "clinical-sloan-compare-trial-frame.toml",
                population,
                case_id,
            )
            for population, case_id in (("adult-clinic", 0), ("young", 1))
        ),
        *(
            StoredCase(
                "clinical-validation-optics-gp.sqlite",
                "clinical-sloan-optics-gp-seed1",
                "clinical-sloan-optics-gp.toml",
                population,
                0,
            )
            for population in ("adult-clinic", "adult-clinic-misspecified")
        ),
        *(
            StoredCase(
                "clinical-validation-clinical-sloan-compare-sliders-evr-precision.sqlite",
                "clinical-sloan-compare-sliders-evr-precision-seed1",
                "clinical-sloan-compare-sliders-evr-precision.toml",
                population,
                0,
            )
            for population in ("adult-clinic", "young")
        ),
    ]
}


def stored_case(store: str, experiment: str, population: str, case_id: int, policy: str = "evr") -> StoredCase:
    """The registered :class:`StoredCase` of ``store`` (a file name of docs/results)."""
    key = StoredCase(store, experiment, "", population, case_id, policy).key
    assert key in STORED_CASES, f"{key}: not a registered stored run (tests/stored_runs.py STORED_CASES)"
    return STORED_CASES[key]
