"""How many answers a ±0.25 D, 95% credible region needs at best (Cramér-Rao bound), and how far
the shipped protocol is from it, patient by patient.

The clinical validation asks the precision stop (95% region within ±0.25 D on M and on J = (J0, J45)) to fire
by a median of 60 answers. :mod:`visiontune.validation.information_bound` bounds the fewest answers
any design could need for a calibrated posterior to get there (the patient follows the model
exactly, everything but P* = (M, J0, J45) is known, every answer is the most informative question,
lenses within 1 D of the correction). This prints:

1. the best information per answer and the bound by slope and starting prescription, letters only
   and with Eq. 11 comparisons, for an eye that does not accommodate and one that does (and, for
   that one, what an answer tells of M when its own nuisance is unknown too:
   :func:`~visiontune.validation.information_bound.efficient_information`);
2. the bound for each patient of ``--population`` (the validation's cases: population seed
   ``--seed``, the first ``--cases``; each with its own slope, lapse, amplitude of accommodation
   and start), and the same with each answer's nuisance unknown, by age, beside the answers each
   session of a validation store used (``--store``,
   ``--experiment``, ``--policy``: the runs of ``visiontune validate``) and its stop.

Run: python benchmarks/precision_bound.py
     python benchmarks/precision_bound.py --store docs/results/clinical-validation-clinical-sloan-compare.sqlite
"""

from __future__ import annotations

import argparse

import numpy as np
from joblib import Parallel, delayed
from validation_cases import by_age

from visiontune.optics.comparison_answers import ComparisonModel
from visiontune.refraction.start import SOURCES, YOUNG_AUTOREFRACTION_SIGMA_M_D, StartingPoint
from visiontune.validation.clinic import stored_metrics, validation_case
from visiontune.validation.information_bound import (
    answers_needed,
    comparison_information,
    efficient_information,
    letter_information,
    patient_bound,
)

#: An eye that accommodates more than the 1 D reach: no lens on the minus side is blurred along M.
ACCOMMODATING_D = 4.0


def by_slope() -> None:
    print("fewest answers for a 95% region within ±0.25 D on M and J (everything but P* known, lenses within 1 D):")
    starts = {name: s for name, s in SOURCES.items() if s is not None}
    starts["autorefraction, aged <= 40"] = (YOUNG_AUTOREFRACTION_SIGMA_M_D, SOURCES["autorefraction"][1])
    for slope in (3.0, 5.0, 8.0):
        letter, offset = letter_information(slope)
        cells = ", ".join(f"{name} {answers_needed(letter, letter, sm, sj)}" for name, (sm, sj) in starts.items())
        print(
            f"  slope {slope:g} logMAR^-1, letters only: I* = {letter:.2f} per answer "
            f"at {abs(offset):.2f} D off; {cells}"
        )
        comp = comparison_information(slope)
        comp_m = comparison_information(slope, amplitude=ACCOMMODATING_D)
        letter_eff = efficient_information("letter", slope, amplitude=ACCOMMODATING_D)[0]
        comp_eff = efficient_information("comparison", slope, amplitude=ACCOMMODATING_D)[0]
        sm, sj = starts["autorefraction"]
        sy = starts["autorefraction, aged <= 40"][0]
        print(
            f"    with comparisons: I* = {comp[0]:.2f} (lenses {comp[1]:+.2f}, {comp[2]:+.2f} D off); "
            "along M in an eye "
            f"that accommodates {comp_m[0]:.2f} ({comp_m[1]:+.2f}, {comp_m[2]:+.2f}); autorefraction "
            f"{answers_needed(comp[0], comp[0], sm, sj)}, accommodating and aged <= 40 "
            f"{answers_needed(max(comp_m[0], letter), comp[0], sy, sj)}"
        )
        print(
            f"    along M in an eye that accommodates, each answer's nuisance unknown: a letter {letter_eff:.2f} (VA* "
            f"unknown), a comparison {comp_eff:.2f} (its scale κ a unknown)"
        )


def case_bound(population: str, case_id: int, seed: int) -> dict:
    """The bound of one validation case, with its age."""
    case = validation_case(population, case_id, seed)
    sigma = None
    if case.start_rx is not None:
        sigma = StartingPoint(case.start_rx, case.start_source, case.age_years).sigma
    sm, sj = (np.inf, np.inf) if sigma is None else (float(sigma[0]), float(sigma[1]))
    bound = patient_bound(
        case.slope, case.accommodation_d, sm, sj, lapse=case.lapse, model=ComparisonModel(lapse=case.lapse)
    )
    return {
        "case": case_id,
        "age": case.age_years,
        "bound": bound.answers,
        "letters_only": bound.answers_letters_only,
        "nuisance": bound.answers_nuisance,
    }


def by_patient(args: argparse.Namespace) -> None:
    rows = Parallel(n_jobs=args.jobs)(delayed(case_bound)(args.population, i, args.seed) for i in range(args.cases))
    runs = stored_metrics(args.store, args.population, args.policy, args.experiment) if args.store else {}
    print(
        f"\n{args.population}, population seed {args.seed}, {args.cases} patients: the bound per patient "
        "(letters and Eq. 11 comparisons; letters only)" + (f", beside {args.store}" if runs else "")
    )
    for label, group in by_age(rows):
        if not group:
            continue
        bound = np.array([r["bound"] for r in group])
        letters = np.array([r["letters_only"] for r in group])
        nuisance = np.array([r["nuisance"] for r in group])
        line = (
            f"  {label:12s} n={len(group):3d}  bound: median {np.median(bound):5.1f}, "
            f"<= 60 in {np.mean(bound <= 60):4.0%}"
            f"  | letters only: median {np.median(letters):5.1f}, <= 60 in {np.mean(letters <= 60):4.0%}"
            f"  | nuisances unknown: median {np.median(nuisance):5.1f}, <= 60 in {np.mean(nuisance <= 60):4.0%}, "
            f"<= 120 in {np.mean(nuisance <= 120):4.0%}"
        )
        stored = [(runs[r["case"]], r["bound"]) for r in group if r["case"] in runs]
        if stored:
            used = np.array([m["answers"] for m, _ in stored])
            stopped = np.array([m["stopped_by"] == "precision" for m, _ in stored])
            ratio = np.array([m["answers"] / b for m, b in stored if m["stopped_by"] == "precision"])
            line += (
                f"  | stored: median {np.median(used):5.1f} answers, precision stop {stopped.mean():4.0%}, "
                f"answers / bound where it stopped: median {np.median(ratio) if len(ratio) else float('nan'):.1f}"
            )
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--population", default="adult-clinic")
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1, help="population seed (default 1, the validation's)")
    parser.add_argument("--store", help="a visiontune validate store to set beside the bound")
    parser.add_argument("--experiment", help="the store's experiment (default: its only one for the population)")
    parser.add_argument("--policy", default="evr")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    by_slope()
    by_patient(args)


if __name__ == "__main__":
    main()
