"""What keeps the precision stop from firing: the sessions that ran to the budget, part by part.

The precision stop fires when the ``level`` (95%) radius of ``M`` and that of the cylinder vector
``J = (J0, J45)`` around the estimate are both within the protocol's precision (±0.25 D), and,
with comparisons that infer the patient's sensitivity ``κ``, once the posterior SD of ``ln κ`` is
at most ``sensitivity_to_stop`` times the prior's (:mod:`visiontune.refraction.loop`). For each
simulated patient of ``--population`` (the validation's cases: population seed 1, the first
``--cases``) whose session ran to its budget, this refracts it again through the one trial loop
(the same answers, bit for bit) and prints, at the end, the radius of ``M``, the radius of ``J``,
the posterior SD of ``ln κ`` and the patient's age and slope; then how many sessions each part
blocks.

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/precision_blockers.py --protocol clinical-sloan-compare --cases 100
"""

from __future__ import annotations

import argparse

import numpy as np
from joblib import Parallel, delayed

from visiontune.refraction.estimate import region_from_samples
from visiontune.refraction.optics_model import LOG_SENSITIVITY, has_column
from visiontune.refraction.protocol import load_protocol
from visiontune.validation.clinic import TimedPresenter, case_refraction, validation_case


def final_widths(protocol_name: str, population: str, case_id: int, seed: int) -> dict | None:
    """Refract case ``case_id`` as ``visiontune validate`` does; ``None`` unless it ran to the
    budget, else the radii of ``M`` and ``J`` at the protocol's level, the SD of ``ln κ`` (NaN
    without it) and the patient's age and slope."""
    protocol = load_protocol(protocol_name)
    case = validation_case(population, case_id, seed)
    refraction = case_refraction(protocol, case)
    patient = case.patient(protocol.n_alternatives)
    result = refraction.run(TimedPresenter(patient))
    if result["stopped_by"] != "budget":
        return None
    post = refraction.engine.posterior(refraction.trials())
    w = post.weights / post.weights.sum()
    region = region_from_samples(
        post.theta[:, :3], w, post.best_correction(), protocol.stopping.precision.level, "minus"
    )
    sd_log_kappa = float("nan")
    if has_column(post.theta, "log_sensitivity"):
        lk = post.theta[:, LOG_SENSITIVITY]
        sd_log_kappa = float(np.sqrt(w @ (lk - w @ lk) ** 2))
    return {
        "case": case_id,
        "m_pm_d": region.m_pm_d,
        "j_pm_d": region.cylinder_vector_pm_d,
        "sd_log_kappa": sd_log_kappa,
        "age_years": case.age_years,
        "slope": float(patient.psychometric.slope),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", default="clinical-sloan-compare")
    parser.add_argument("--population", default="adult-clinic")
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    protocol = load_protocol(args.protocol)
    precision = protocol.stopping.precision
    if precision is None:
        parser.error(f"{args.protocol}: no precision stop to diagnose")
    rows = [
        r
        for r in Parallel(n_jobs=args.jobs)(
            delayed(final_widths)(args.protocol, args.population, k, args.seed) for k in range(args.cases)
        )
        if r is not None
    ]
    print(f"{args.protocol}, {args.population}: {len(rows)} of {args.cases} SIMULATED sessions ran to the budget")
    print("case   M radius   J radius   sd ln kappa   age   slope")
    for r in rows:
        print(
            f"{r['case']:4d}   {r['m_pm_d']:8.3f}   {r['j_pm_d']:8.3f}   {r['sd_log_kappa']:11.3f}   "
            f"{r['age_years']:3.0f}   {r['slope']:5.2f}"
        )
    if not rows:
        return 0
    m = np.array([r["m_pm_d"] for r in rows])
    j = np.array([r["j_pm_d"] for r in rows])
    print(
        f"M radius above {precision.m_d:g} D: {int(np.sum(m > precision.m_d))} (median {np.median(m):.2f} D); "
        f"J radius above {precision.cylinder_vector_d:g} D: {int(np.sum(j > precision.cylinder_vector_d))} "
        f"(median {np.median(j):.2f} D); "
        f"only J: {int(np.sum((j > precision.cylinder_vector_d) & (m <= precision.m_d)))}"
    )
    settings = protocol.comparisons
    if settings is not None and settings.sensitivity_to_stop is not None:
        sigma = settings.comparison.sensitivity_sigma
        kappa = np.array([r["sd_log_kappa"] for r in rows])
        print(
            f"sd of ln kappa above {settings.sensitivity_to_stop:g} x the prior's {sigma:g}: "
            f"{int(np.sum(kappa > settings.sensitivity_to_stop * sigma))}"
        )
    print(
        f"median age {np.median([r['age_years'] for r in rows]):.0f} years, "
        f"median slope {np.median([r['slope'] for r in rows]):.2f} per logMAR"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
