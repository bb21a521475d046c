"""A protocol with slider questions against patients who choose along the knob unlike its model.

`visiontune validate --protocol docs/results/protocols/clinical-sloan-compare-sliders.toml` scores
slider sessions on simulated patients who pick the clearest lens by the protocol's own choice model
(:class:`~visiontune.refraction.slider.SliderModel`, noise 0.03 logMAR, lapse 0.05): the sliders are
well specified there. Here the same patients (the validation's cases: population seed 1, the first
``--cases``) choose with ``--noise`` and ``--lapse`` of their own, through the one trial loop over an
in-memory log, and the table gives the share within 0.25 / 0.50 D (power-vector distance of the trial
lens filed to the truth), the median number of answers, the share stopped by the precision stop and
the median patient time. Every patient here is SIMULATED.

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/slider_robustness.py --noise 0.08 --lapse 0.15 --cases 100
"""

from __future__ import annotations

import argparse

import numpy as np
from joblib import Parallel, delayed

from visiontune.optics import Prescription
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter
from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.slider import SliderModel
from visiontune.refraction.start import StartingPoint

PROTOCOL = "docs/results/protocols/clinical-sloan-compare-sliders.toml"


def run(protocol_name: str, population: str, case_id: int, seed: int, patient_model: SliderModel) -> tuple:
    """``(error (D), answers, stopped_by, patient seconds)`` of one simulated session."""
    protocol = load_protocol(protocol_name)
    case = draw_cases(population_by_name(population), case_id + 1, seed)[case_id]
    start = StartingPoint(case.start_rx, case.start_source, case.age_years)
    refraction = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
    result = refraction.run(SimulatedPresenter(case.patient(protocol.n_alternatives), slider_model=patient_model))
    found = Prescription(**{k: result["rounded"][k] for k in ("sphere_d", "cylinder_d", "axis_deg")})
    error = float(np.linalg.norm(found.power_vector_array() - case.true_rx.power_vector_array()))
    return error, int(result["trials_used"]), result["stopped_by"], refraction.patient_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", default=PROTOCOL)
    parser.add_argument("--population", default="adult-clinic")
    parser.add_argument("--noise", type=float, default=0.08, help="the patients' choice noise (logMAR)")
    parser.add_argument("--lapse", type=float, default=0.15, help="the patients' lapse rate")
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1, help="population seed (default 1, the validation's)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    model = SliderModel(args.noise, args.lapse)
    rows = Parallel(n_jobs=args.jobs)(delayed(run)(args.protocol, args.population, i, args.seed, model)
                                      for i in range(args.cases))  # fmt: skip
    error = np.array([r[0] for r in rows])
    answers = np.array([r[1] for r in rows])
    stopped = np.array([r[2] == "precision" for r in rows])
    seconds = np.array([r[3] for r in rows])
    print(f"SIMULATED patients: {args.population}, {args.cases} cases, population seed {args.seed}; protocol "
          f"{args.protocol}; the patients choose along a knob with noise {args.noise:g} logMAR, lapse {args.lapse:g}\n")
    print("| within 0.25 D | within 0.50 D | answers (median) | precision stop | patient time (median, s) |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    print(f"| {np.mean(error <= 0.25):.0%} | {np.mean(error <= 0.5):.0%} | {np.median(answers):.0f} | "
          f"{stopped.mean():.0%} | {np.median(seconds):.0f} |")


if __name__ == "__main__":
    main()
