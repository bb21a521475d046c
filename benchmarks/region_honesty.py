"""Why the 95% region is too small at the stop: the posterior each session ends with (SIMULATED patients).

Refracts the first ``--cases`` patients of a population through the one trial loop (as
``visiontune validate`` does) and, at the session's end, prints per patient: answers, chart lines,
the filed lens's error, the 95% region's radius around the estimate and whether it covers the truth,
the posterior SD of ``M``, the posterior mean and SD of ``ln κ`` (the comparison sensitivity; the
validation's patients compare by Eq. 11 of their own letter task, ``κ = 1``, ``ln κ = 0``), and, for
a prior of two formulas, the posterior mass of the letter task's formula (``ln κ`` below the midpoint
of the two medians). ``--rebuild N`` also rebuilds the posterior from the same answers with ``N``
particles and reports its coverage beside: if the particles' approximation made the region too
small, the larger posterior covers where the session's did not.

    OPENBLAS_NUM_THREADS=1 python benchmarks/region_honesty.py \
        --protocol docs/results/protocols/clinical-sloan-lines-filed.toml --population young --cases 30 --seed 2 \
        --rebuild 16000
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.optics import Prescription
from visiontune.refraction.estimate import region_from_samples
from visiontune.refraction.loop import MemoryLog, Refraction, SimulatedPresenter
from visiontune.refraction.optics_model import LOG_SENSITIVITY
from visiontune.refraction.population import draw_cases, population_by_name
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.refraction.trial import is_line


def covered(post, truth: np.ndarray, level: float = 0.95) -> tuple[bool, float]:
    """Whether ``truth`` lies in the ``level`` region ``{P: |P - P̂| <= r}`` of ``post``, and ``r``."""
    centre = post.best_correction()
    region = region_from_samples(post.theta[:, :3], post.weights, centre, level, "minus")
    return bool(np.linalg.norm(truth - centre) <= region.distance_d), region.distance_d


def sensitivity_summary(post) -> tuple[float, float, float | None]:
    """Posterior mean and SD of ``ln κ`` and, for a mixture prior, the mass below its midpoint (NaN, NaN, None
    without a ``ln κ`` column)."""
    prior = post.sensitivity_prior
    if prior is None:
        return float("nan"), float("nan"), None
    w = post.weights / post.weights.sum()
    log_k = post.theta[:, LOG_SENSITIVITY]
    mean = float(w @ log_k)
    sd = float(np.sqrt(w @ (log_k - mean) ** 2))
    low = None
    if len(prior) == 4 and prior[2] == "mixture":
        low = float(w @ (log_k < 0.5 * (np.log(prior[0]) + np.log(prior[3]))))
    return mean, sd, low


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", required=True)
    ap.add_argument("--population", default="young")
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1, help="population seed")
    ap.add_argument("--rebuild", type=int, default=0, help="rebuild each final posterior with this many particles")
    args = ap.parse_args()
    protocol = load_protocol(args.protocol)
    bigger = None
    if args.rebuild:
        bigger = dataclasses.replace(protocol, model=dataclasses.replace(protocol.model, n_particles=args.rebuild))
    print(f"SIMULATED patients: {args.population}, population seed {args.seed}, protocol {protocol.name}")
    print("case  age answers lines  error  r95  covered  rebuilt  sd(M)   ln k mean/sd  P(letter formula)")
    rows = []
    for case in draw_cases(population_by_name(args.population), args.cases, args.seed):
        try:
            start = StartingPoint(case.start_rx, case.start_source, case.age_years)
        except InvalidInputError:
            continue  # refused as the clinic refuses it
        refraction = Refraction(MemoryLog(), protocol, seed=case.seed, start=start, simulated=True)
        result = refraction.run(SimulatedPresenter(case.patient(protocol.n_alternatives)))
        trials = refraction.trials()
        truth = case.true_rx.power_vector_array()
        post = refraction.engine.correction_draws(trials)
        inside, radius = covered(post, truth)
        rebuilt = None
        if bigger is not None:
            again = Refraction(MemoryLog(), bigger, seed=case.seed, start=start, simulated=True)
            rebuilt = covered(again.engine.correction_draws(trials), truth)[0]
        r = result["rounded"]
        filed = Prescription(r["sphere_d"], r["cylinder_d"], r["axis_deg"]).power_vector_array()
        error = float(np.linalg.norm(filed - truth))
        w = post.weights / post.weights.sum()
        sd_m = float(np.sqrt(w @ (post.theta[:, 0] - w @ post.theta[:, 0]) ** 2))
        mean_k, sd_k, low = sensitivity_summary(post)
        rows.append((inside, rebuilt, mean_k))
        age = "-" if case.age_years is None else f"{case.age_years:4.1f}"
        print(
            f"{case.case_id:4d} {age:>4s} {len(trials):7d} {sum(map(is_line, trials)):5d} {error:6.2f} {radius:5.2f}"
            f" {str(inside):>8s} {'-' if rebuilt is None else str(rebuilt):>8s} {sd_m:6.2f} {mean_k:7.2f}/{sd_k:4.2f}"
            f" {'-' if low is None else f'{low:.2f}':>8s}",
            flush=True,
        )
    cov = np.mean([r[0] for r in rows])
    line = f"95% coverage {100 * cov:.0f}% of {len(rows)}"
    if bigger is not None:
        line += f"; rebuilt with {args.rebuild} particles {100 * np.mean([r[1] for r in rows]):.0f}%"
    finite = [r[2] for r in rows if np.isfinite(r[2])]
    if finite:
        line += f"; posterior mean of ln κ at the end: median {np.median(finite):.2f} (the patients' is 0)"
    print(line)


if __name__ == "__main__":
    main()
