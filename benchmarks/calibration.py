"""Which part of the posterior is over-confident: probability integral transforms of the truth.

The clinical validation reports the coverage of the credible region ``{P : |P - P̂| <= r}`` at
50%, 80% and 95%; with comparisons it is 37% / 69% / 93% on the adult-clinic patients, so the
region is too narrow at its core. This script looks at the parts: for each simulated patient
refracted with ``--protocol`` through the one trial loop (the validation's cases: population seed
1, the first ``--cases``), at the end of the session, the posterior's CDF at the true value of each
component of ``P* = (M, J0, J45)`` (the probability integral transform, PIT: uniform on [0, 1]
when the posterior is calibrated; Dawid 1984, *Statistical theory: the prequential approach*,
J. R. Stat. Soc. A 147:278-292) and the standardised error ``z = (posterior mean - truth) /
posterior sd`` (mean 0 and sd 1 when calibrated: a mean away from 0 is a bias, an sd above 1
over-confidence). With a comparison model that infers the patient's comparison sensitivity ``κ``
it also gives the posterior median of ``κ a`` over the patient's own slope ``a`` (1 for a patient
who answers by Eq. 11 of Fauvel & Chalk (contextual BO), the validation's).

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/calibration.py --protocol clinical-sloan-compare --cases 60
"""

from __future__ import annotations

import argparse

import numpy as np
from joblib import Parallel, delayed

from visiontune.refraction.optics_model import LOG_SENSITIVITY, LOG_SLOPE, has_column
from visiontune.refraction.protocol import load_protocol
from visiontune.validation.clinic import TimedPresenter, case_refraction, validation_case

COMPONENTS = ("M", "J0", "J45")


def diagnose(protocol_name: str, population: str, case_id: int, seed: int) -> dict:
    """Refract case ``case_id`` as ``visiontune validate`` does; the PIT, mean error and sd of each
    component of ``P*`` under the final posterior, and ``κ a / a_patient`` when ``κ`` is inferred."""
    protocol = load_protocol(protocol_name)
    case = validation_case(population, case_id, seed)
    refraction = case_refraction(protocol, case)
    patient = case.patient(protocol.n_alternatives)
    refraction.run(TimedPresenter(patient))
    post = refraction.engine.posterior(refraction.trials())
    w, theta = post.weights / post.weights.sum(), post.theta
    truth = case.true_rx.power_vector_array()
    mean = w @ theta[:, :3]
    out = {
        "pit": [float(w @ (theta[:, i] <= truth[i])) for i in range(3)],
        "error": (mean - truth).tolist(),
        "sd": np.sqrt(w @ (theta[:, :3] - mean) ** 2).tolist(),
    }
    if has_column(theta, "log_sensitivity"):
        order = np.argsort(log_ka := theta[:, LOG_SENSITIVITY] + theta[:, LOG_SLOPE])
        median = log_ka[order][np.searchsorted(np.cumsum(w[order]), 0.5)]
        out["kappa_a_ratio"] = float(np.exp(median) / patient.psychometric.slope)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", default="clinical-sloan-compare")
    parser.add_argument("--population", default="adult-clinic")
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1, help="population seed (default 1, the validation's)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    rows = Parallel(n_jobs=args.jobs)(
        delayed(diagnose)(args.protocol, args.population, i, args.seed) for i in range(args.cases)
    )
    pit, error, sd = (np.array([r[k] for r in rows]) for k in ("pit", "error", "sd"))
    print(f"SIMULATED patients: {args.protocol}, {args.population}, {args.cases} cases, population seed {args.seed}\n")
    print("| component | truth in the central 50 / 80 / 95% | mean PIT | z: mean | z: sd |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for i, name in enumerate(COMPONENTS):
        p, z = pit[:, i], error[:, i] / sd[:, i]
        shares = " / ".join(f"{np.mean(np.abs(p - 0.5) < c / 2):.0%}" for c in (0.5, 0.8, 0.95))
        print(f"| {name} | {shares} | {p.mean():.2f} | {z.mean():+.2f} | {z.std():.2f} |")
    if "kappa_a_ratio" in rows[0]:
        ratio = np.array([r["kappa_a_ratio"] for r in rows])
        q10, q50, q90 = np.quantile(ratio, [0.1, 0.5, 0.9])
        print(f"\nposterior median of κ a over the patient's slope: median {q50:.2f} (10-90%: {q10:.2f}-{q90:.2f})")


if __name__ == "__main__":
    main()
