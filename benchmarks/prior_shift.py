"""A measured idea, not shipped: centre the prior of an autorefraction start at start + b (SIMULATED patients).

Autorefractors read more minus than the subjective refraction (Kinge, Midelfart & Jacobsen 1996: -0.13 to
-0.23 D; more in eyes that accommodate), and the session's prior (:mod:`visiontune.refraction.start`) is
centred on the reading itself. This refracts the first ``--cases`` patients of each population with the
prior's ``M`` moved plus by ``--adult`` (over 40) and ``--young`` (40 or less, or of unknown age) and
prints within 0.25 / 0.50 D, patient seconds, 95% coverage, young over-minused and the mean signed error
of ``M``.

    OPENBLAS_NUM_THREADS=1 python benchmarks/prior_shift.py --adult 0.2 --young 0.4 \
        --protocol docs/results/protocols/clinical-sloan-lines-filed.toml --populations adult-clinic,young --cases 20
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from visiontune.optics.accommodation import YOUNG_AGE_YEARS
from visiontune.refraction import start as start_module
from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.validation.clinic import CaseSpec, run_case


def shift_prior(adult_d: float, young_d: float) -> None:
    """Move the prior of every autorefraction start by ``adult_d`` / ``young_d`` in ``M`` (this process)."""
    centre = start_module.StartingPoint.centre

    def shifted(self):
        c = centre.fget(self).copy()
        if self.source == "autorefraction":
            young = self.age_years is None or self.age_years <= start_module.YOUNG_AUTOREFRACTION_MAX_AGE
            c[0] += young_d if young else adult_d
        return c

    start_module.StartingPoint.centre = property(shifted)


def summary(population: str, rows: list[dict]) -> str:
    e = np.array([r["error_d"] for r in rows])
    t = np.array([r["patient_s"] for r in rows])
    covered = np.mean([r["covered_95"] for r in rows])
    young = [r for r in rows if r["age_years"] is not None and r["age_years"] <= YOUNG_AGE_YEARS]
    over_minus = sum(r["signed_error_m_d"] < -0.25 - 1e-9 for r in young)
    signed = np.mean([r["signed_error_m_d"] for r in rows])
    within = f"{100 * np.mean(e <= 0.25 + 1e-9):.0f}% / {100 * np.mean(e <= 0.5 + 1e-9):.0f}%"
    return (
        f"| {population} | {len(rows)} | {within} "
        f"| {np.median(t):.0f} / {np.percentile(t, 90):.0f} | {100 * covered:.0f}% | {over_minus} of {len(young)} "
        f"| {signed:+.3f} |"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adult", type=float, default=0.0)
    parser.add_argument("--young", type=float, default=0.0)
    parser.add_argument("--protocol", required=True)
    parser.add_argument("--populations", default="adult-clinic,young")
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    shift_prior(args.adult, args.young)
    text = Path(args.protocol).read_text(encoding="utf-8")
    print(f"SIMULATED patients; the prior's M moved +{args.adult} D (over 40), +{args.young} D (40 or less)")
    print(
        "| population | n | within 0.25 / 0.50 D | trial-frame s median / p90 | 95% coverage | young over-minused "
        "| mean signed error of M |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for population in [p.strip() for p in args.populations.split(",") if p.strip()]:
        rows = []
        for case in draw_cases(population_by_name(population), args.cases, args.seed):
            result = run_case(CaseSpec("prior-shift", text, args.protocol, "mixed", population, case))
            if "error_d" in result.metrics:
                rows.append(result.metrics)
        print(summary(population, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
