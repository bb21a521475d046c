"""Validation of the near addition on simulated presbyopes: the Bayesian step beside the tentative
add by age as it is (Millodot 2009's table), both eyes of each patient.

Run as ``python -m visiontune.validation.near_validation --n 200 --seed 1`` (one process, no
workers): it prints a Markdown report (the tables of ``docs/results/near-addition.md``) on
stdout and writes nothing. Every patient is SIMULATED
(:func:`~visiontune.refraction.near_population.draw_near_patients`), the near distance 40 cm.

Per eye: the add filed (the step of :mod:`visiontune.refraction.near_add`: refine, file, three check
letters; the left eye from the right eye's posterior) and the table's add by age, each against the
true add (the reserve rule on the simulated eye's near-usable amplitude, rounded to 0.25 D); the true
near acuity through each (the simulated eye's acuity model, no letters: what the patient would see);
whether the true add lies in the 95% credible region. Per patient: the patient's time for both eyes
(3 s a letter, 4 s an add put in, the check letters included).

Populations: ``hofstetter`` (the design population), ``mixed-acuity`` (each patient's acuity from
one of the three published acuity models, the model assumes Blendowske's), ``low-amplitude``
(every amplitude 1 D below Hofstetter's lines, clipped at 0: the age prior is off).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from visiontune.refraction.near_add import (
    DEFAULT_NEAR_DISTANCE_CM,
    NearEyeStep,
    NearPosterior,
    fellow_prior,
    near_demand_d,
    tentative_add,
)
from visiontune.refraction.near_population import draw_near_patients

__all__ = ["POPULATIONS", "near_validation", "run_patient"]

#: name -> keyword arguments of draw_near_patients
POPULATIONS = {
    "hofstetter": {},
    "mixed-acuity": {"mixed_acuity": True},
    "low-amplitude": {"amplitude_shift_d": -1.0},
}


def _run_eye(case, demand: float, distance_cm: float, prior=None):
    post = NearPosterior(demand, case.age_years, prior_amplitude=prior)
    step = NearEyeStep(post, tentative_add(case.age_years, distance_cm))
    index = 0
    while (nxt := step.next()) is not None:
        phase, q = nxt
        _, correct = case.answer(index, q.add_d, q.size_logmar, demand)
        step.record(phase, q.add_d, q.size_logmar, correct)
        index += 1
    return step


def run_patient(od, os_, distance_cm: float = DEFAULT_NEAR_DISTANCE_CM) -> list[dict]:
    """Both eyes of one simulated presbyope: one dict per eye (module docstring)."""
    demand = near_demand_d(distance_cm)
    rows = []
    prior = None
    for case in (od, os_):
        step = _run_eye(case, demand, distance_cm, prior)
        prior = fellow_prior(step.posterior)
        r = step.result()
        truth = case.true_add(demand)
        table = tentative_add(case.age_years, distance_cm)
        rows.append(
            {
                "age": case.age_years,
                "true_add": truth,
                "add": r.add_d,
                "table_add": table,
                "covered": r.lower_d - 1e-9 <= truth <= r.upper_d + 1e-9,
                "stop": r.stop,
                "letters": r.letters,
                "seconds": r.seconds,
                "va": float(case.acuity_logmar(r.add_d, demand)),
                "va_table": float(case.acuity_logmar(table, demand)),
                "va_true_add": float(case.acuity_logmar(truth, demand)),
            }
        )
    return rows


def _share(flags) -> str:
    flags = list(flags)
    return f"{100.0 * sum(flags) / len(flags):.0f}%" if flags else "-"


def near_validation(n: int, seed: int, populations=tuple(POPULATIONS), out=sys.stdout) -> dict:
    """Run and print the report; return ``{population: (eye rows, patient seconds)}``."""
    results = {}
    print(
        f"SIMULATED presbyopes, {n} patients (both eyes) a population, seed {seed}, near distance "
        f"{DEFAULT_NEAR_DISTANCE_CM:g} cm.\n",
        file=out,
    )
    print(
        "| population | add | within 0.25 D | within 0.50 D | true add in 95% region | near VA through it, "
        "median logMAR | near VA <= 0.1 logMAR | patient time both eyes, median / p90 s | precision stop |",
        file=out,
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |", file=out)
    for name in populations:
        t0 = time.perf_counter()
        eyes, seconds = [], []
        for od, os_ in draw_near_patients(n, seed, **POPULATIONS[name]):
            rows = run_patient(od, os_)
            eyes += rows
            seconds.append(sum(r["seconds"] for r in rows))
        results[name] = (eyes, seconds)
        wall = time.perf_counter() - t0
        for label, key, va in (("Bayesian step", "add", "va"), ("table by age", "table_add", "va_table")):
            err = [abs(r[key] - r["true_add"]) for r in eyes]
            time_text = (
                f"{statistics.median(seconds):.0f} / {np.percentile(seconds, 90):.0f}"
                if key == "add"
                else "0 (no letters)"
            )
            print(
                f"| {name} | {label} | {_share(e <= 0.25 + 1e-9 for e in err)} | "
                f"{_share(e <= 0.50 + 1e-9 for e in err)} | "
                f"{_share(r['covered'] for r in eyes) if key == 'add' else '-'} | "
                f"{round(statistics.median(r[va] for r in eyes), 2) + 0.0:+.2f} | "
                f"{_share(r[va] <= 0.1 for r in eyes)} | "
                f"{time_text} | {_share(r['stop'] == 'precision' for r in eyes) if key == 'add' else '-'} |",
                file=out,
            )
        print(f"<!-- {name}: {wall:.0f} s wall -->", file=out)
    print("\nWithin 0.25 D by age (Bayesian step / table by age), eyes:\n", file=out)
    bands = ((40, 50), (50, 60), (60, 70), (70, 80.01))
    print("| population | " + " | ".join(f"{lo:g}-{min(hi, 80):g} y" for lo, hi in bands) + " |", file=out)
    print("| --- |" + " --- |" * len(bands), file=out)
    for name, (eyes, _) in results.items():
        cells = []
        for lo, hi in bands:
            band = [r for r in eyes if lo <= r["age"] < hi]
            cells.append(
                f"{_share(abs(r['add'] - r['true_add']) <= 0.25 + 1e-9 for r in band)} / "
                f"{_share(abs(r['table_add'] - r['true_add']) <= 0.25 + 1e-9 for r in band)} "
                f"(n={len(band)})"
            )
        print(f"| {name} | " + " | ".join(cells) + " |", file=out)
    print("\nLetters an eye (median / p90) and near acuity through the true add (median):\n", file=out)
    for name, (eyes, _) in results.items():
        letters = [r["letters"] for r in eyes]
        print(
            f"- {name}: {statistics.median(letters):.0f} / {np.percentile(letters, 90):.0f} letters; "
            f"{round(statistics.median(r['va_true_add'] for r in eyes), 2) + 0.0:+.2f} logMAR through the true add",
            file=out,
        )
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m visiontune.validation.near_validation",
        description="validate the near addition on simulated presbyopes",
    )
    parser.add_argument("--n", type=int, default=200, help="patients a population (default 200)")
    parser.add_argument("--seed", type=int, default=1, help="population seed (default 1)")
    parser.add_argument(
        "--population", action="append", choices=tuple(POPULATIONS), help="only these populations (default: all)"
    )
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error(f"--n: expected at least 1 patient, got {args.n}")
    near_validation(args.n, args.seed, tuple(args.population or POPULATIONS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
