"""Letters only vs letters and slider (knob) questions, headless, on the particle posterior.

For ``--cases`` simulated patients of the ``adult-clinic`` population (``draw_cases(..., seed)``),
each starting from its own starting prescription (:class:`~visiontune.refraction.start.StartingPoint`),
two sessions run directly on a :class:`~visiontune.refraction.optics_model.ParticlePosterior` with
the clinical protocol's model (``clinical-sloan``: 10 Sloan letters, lapse 0.04, 4000 particles):

* ``letters``: every question is the EVR letter (:func:`visiontune.refraction.optics_rules.propose`,
  ``"evr"``, the protocol's lens steps, letter sizes on a 0.05 logMAR grid and 1 D radius), answered
  by the simulated patient (``answer_trial``, keyed by the answer's index, with a Sloan letter drawn
  as the trial loop draws it);
* ``letters + sliders``: at each step the EVR letter and the best knob
  (:func:`visiontune.refraction.slider.propose_slider`: sphere, cylinder, axis through the estimate)
  are scored on the same subsample of the posterior by the expected reduction of ``tr Cov(P*)``
  (D²) per second of the patient's time, and the larger is asked. Durations (**stated**, not
  measured): a letter 3 s, a slider 8 s (the clinician turns the knob through its 5-13 clicks while
  the patient reads, then the patient names the clearest). The simulated patient picks the knob
  position by the model's own choice rule (:func:`~visiontune.refraction.slider.simulated_slider_choice`,
  ``τ = 0.03`` logMAR, ``ε = 0.05``) at its true acuity, so the slider's model is well specified;
  ``--patient-noise`` and ``--patient-lapse`` make the patient noisier than the model assumes.

There is no stopping rule: after 20, 30, 40 and 60 answers the table gives the share of patients
whose estimate (``best_correction()``, the 2/3 quantile of ``M`` and the means of ``J``) lies within
0.25 D and 0.50 D (power-vector distance) of the truth, the median patient seconds so far and, for
the mixed arm, the mean number of sliders asked; a second table compares the arms at equal patient
time (60, 90, 120, 180 s: the estimate after the last answer within it). Every draw is keyed by (case, answer), so a run
is reproducible. Nothing is written to disk.

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/sliders.py --cases 20 --seed 1
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from visiontune.refraction import optics_rules
from visiontune.refraction.loop import _letters
from visiontune.refraction.mixed_rules import expected_posterior_variance
from visiontune.refraction.optics_engine import OpticsEngine, _model_spec
from visiontune.refraction.optics_model import ParticlePosterior, probability_correct
from visiontune.refraction.optics_rules import DECISION_PARTICLES
from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.slider import (
    SliderAnswer,
    SliderModel,
    propose_slider,
    simulated_slider_choice,
)
from visiontune.refraction.start import StartingPoint

CHECKPOINTS = (20, 30, 40, 60)
#: Patient seconds at which the arms are also compared (60 letters take 180 s).
TIME_CHECKPOINTS_S = (60, 90, 120, 180)
LETTER_SECONDS = 3.0
SLIDER_SECONDS = 8.0
#: Stream purposes of ``default_rng([seed, k, purpose])``.
_POLICY, _LETTER, _SUBSAMPLE, _SLIDER_ANSWER = 0, 1, 5, 0x51


def run_case(
    case, protocol, mixed: bool, n_answers: int, model: SliderModel, patient_model: SliderModel
) -> list[tuple[float, float, int]]:
    """One session: ``(distance to the truth (D), patient seconds, sliders asked)`` after each answer; the
    posterior assumes ``model``, the simulated patient chooses by ``patient_model``."""
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    seed = int(case.seed)
    engine = OpticsEngine(protocol, start, seed)  # the protocol's lens steps (axis from the start), sizes, radius
    steps, s_grid = engine.protocol.lenses, engine.s_grid
    post = ParticlePosterior(_model_spec(protocol), start, seed)
    patient = case.patient(protocol.n_alternatives)
    letters = _letters(protocol)
    truth = case.true_rx.power_vector_array()
    seconds, sliders, out = 0.0, 0, []
    for k in range(n_answers):
        letter = optics_rules.propose(
            post,
            "evr",
            steps=steps,
            s_grid=s_grid,
            radius=engine.radius(post),
            rng=np.random.default_rng([seed, k, _POLICY]),
        )
        ask_slider = False
        if mixed:
            sub = post.subsample(
                min(DECISION_PARTICLES, post.spec.n_particles), np.random.default_rng([seed, k, _SUBSAMPLE])
            )
            pv = sub[:, :3]
            p = probability_correct(
                sub, np.array([letter.s_logmar]), letter.lens.power_vector_array()[None, :], post.spec
            )
            now = float(np.mean(np.sum(pv**2, axis=1)) - np.sum(pv.mean(axis=0) ** 2))
            after = float(expected_posterior_variance(pv, np.stack([p, 1.0 - p], -1))[0])
            letter_value = (now - after) / LETTER_SECONDS
            slider = propose_slider(
                post, rng=np.random.default_rng([seed, k, _SUBSAMPLE]), model=model, steps=steps, s_grid=s_grid
            )
            ask_slider = slider.value / SLIDER_SECONDS > letter_value
        if ask_slider:
            j = simulated_slider_choice(
                patient, slider.path.lenses, patient_model, np.random.default_rng([seed, k, _SLIDER_ANSWER])
            )
            post.observe(SliderAnswer(slider.path.lenses, slider.s_logmar, j, model))
            seconds += SLIDER_SECONDS
            sliders += 1
        else:
            shown = letters[int(np.random.default_rng([seed, k, _LETTER]).integers(len(letters)))]
            correct = patient.answer_trial(k, letter.s_logmar, letter.lens, shown)
            post.update(letter.s_logmar, letter.lens.power_vector_array(), bool(correct))
            seconds += LETTER_SECONDS
        out.append((float(np.linalg.norm(post.best_correction() - truth)), seconds, sliders))
    return out


def _row(name: str, label: str, rows, answers=None) -> None:
    d = np.array([r[0] for r in rows])
    middle = np.median([r[1] for r in rows]) if answers is None else np.median(answers)
    print(
        f"| {name} | {label} | {np.mean(d <= 0.25 + 1e-9):.0%} | {np.mean(d <= 0.5 + 1e-9):.0%} | "
        f"{np.median(d):.3f} | {middle:.0f} | {np.mean([r[2] for r in rows]):.1f} |"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20, help="simulated patients (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="population seed (default 1)")
    parser.add_argument(
        "--patient-noise",
        type=float,
        default=None,
        help="the simulated patient's slider noise tau (logMAR; default the model's 0.03)",
    )
    parser.add_argument(
        "--patient-lapse",
        type=float,
        default=None,
        help="the simulated patient's slider lapse (default the model's 0.05)",
    )
    args = parser.parse_args(argv)
    protocol = load_protocol("clinical-sloan")
    cases = draw_cases(population_by_name("adult-clinic"), args.cases, args.seed)
    model = SliderModel()
    patient_model = SliderModel(
        model.noise_logmar if args.patient_noise is None else args.patient_noise,
        model.lapse if args.patient_lapse is None else args.patient_lapse,
    )
    n_answers = max(CHECKPOINTS)
    t0 = time.time()
    results = {}
    for name, mixed in (("letters", False), ("letters + sliders", True)):
        results[name] = [run_case(c, protocol, mixed, n_answers, model, patient_model) for c in cases]
        print(f"# {name}: {time.time() - t0:.0f} s", file=sys.stderr)
    print(
        f"adult-clinic, {args.cases} cases, population seed {args.seed}; letter {LETTER_SECONDS:g} s, "
        f"slider {SLIDER_SECONDS:g} s; slider model tau = {model.noise_logmar} logMAR, lapse = {model.lapse}; "
        f"patient tau = {patient_model.noise_logmar}, lapse = {patient_model.lapse}"
    )
    print()
    print("| arm | answers | within 0.25 D | within 0.50 D | median |d| (D) | median patient s | mean sliders |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, runs in results.items():
        for n in CHECKPOINTS:
            _row(name, str(n), [r[n - 1] for r in runs])
    print()
    print("At equal patient time (the estimate after the last answer within the time):")
    print()
    print("| arm | patient s | within 0.25 D | within 0.50 D | median |d| (D) | median answers | mean sliders |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, runs in results.items():
        for budget in TIME_CHECKPOINTS_S:
            last = [max(i for i, row in enumerate(r) if row[1] <= budget + 1e-9) for r in runs]
            _row(name, f"{budget:g}", [r[i] for r, i in zip(runs, last)], answers=[i + 1 for i in last])
    print(f"\nwall time {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
