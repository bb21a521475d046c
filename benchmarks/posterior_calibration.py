"""Is the posterior of ``M`` calibrated at the stop? The probability integral transform, by group (SIMULATED).

For each simulated patient of ``--population`` (population seed ``--seed``, the first ``--cases``
whose start the session accepts and whose age is within ``--ages``), refracted with ``--protocol``
through the one trial loop, the posterior at the session's end gives:

* the PIT of the true spherical equivalent, ``u = Σ_i w_i 1[M_i <= M*]`` (Dawid 1984, *Statistical
  theory: the prequential approach*, J. R. Stat. Soc. A 147:278-292; Gneiting, Balabdaoui & Raftery
  2007, J. R. Stat. Soc. B 69:243-268): for a calibrated posterior ``u`` is uniform on [0, 1], so
  each quartile holds a quarter of the patients; too many in the lowest quartile is a posterior
  that sits too plus, in the highest too minus;
* the probability the stop reads, that the lens to file is within 0.25 D of the correction
  (``Σ_i w_i 1[|P(filed) - P*_i| <= 0.25]``), beside how often it is.

``--acuity-model NAME`` gives every patient that acuity-blur curve instead of the population's
(:data:`~visiontune.optics.acuity.ACUITY_MODELS`; ``pupil-geometric`` through the case's pupil, 4 mm
when it has none), all else the same: the patients of a population that follows the model, with one
thing of the misspecified population's changed. The summary is by acuity curve when the patients have
more than one, with the mean signed error of the filed lens's ``M`` (positive: too plus).

Run (1-3 s a session on a shared core):
    OPENBLAS_NUM_THREADS=1 python benchmarks/posterior_calibration.py --population high-myopia --ages 0,35 --cases 34
    OPENBLAS_NUM_THREADS=1 python benchmarks/posterior_calibration.py --population adult-clinic --ages 0,35 \\
        --cases 40 --acuity-model linear-logmar
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from visiontune.errors import InvalidInputError
from visiontune.optics.acuity import ACUITY_MODELS
from visiontune.refraction.loop import SimulatedPresenter
from visiontune.refraction.mixed_engine import filed_within_probability
from visiontune.refraction.optics_engine import FILED_WITHIN_D
from visiontune.refraction.protocol import DEFAULT_PROTOCOL, load_protocol
from visiontune.validation.clinic import case_refraction, validation_case


def session_end(protocol, case) -> dict | None:
    """The PIT of ``M*``, the stop's probability and the filed lens's error at the end of one session
    of the simulated ``case`` (:func:`~visiontune.validation.clinic.validation_case`); None for a patient
    whose start the session refuses."""
    try:
        refraction = case_refraction(protocol, case)
    except InvalidInputError:
        return None
    refraction.run(SimulatedPresenter(case.patient(protocol.n_alternatives)))
    truth = case.true_rx.power_vector_array()
    post = refraction.engine.correction_draws(refraction.trials())
    filed = refraction.current_estimate().rounded
    return {
        "case_id": case.case_id,
        "age": case.age_years,
        "acuity_model": case.acuity_model,
        "signed_error_m": float(filed.power_vector_array()[0] - truth[0]),
        "pit": float(post.weights @ (post.theta[:, 0] <= truth[0])),
        "p_within": filed_within_probability(post, filed),
        "within": bool(np.linalg.norm(filed.power_vector_array() - truth) <= FILED_WITHIN_D + 1e-9),
    }


def with_curve(case, acuity_model: str | None):
    """The simulated ``case`` with the acuity-blur curve ``acuity_model`` (a name of
    :data:`~visiontune.optics.acuity.ACUITY_MODELS`), all else the same; None: the case as it is."""
    return case if acuity_model is None else dataclasses.replace(case, acuity_model=acuity_model)


def summary(rows: list[dict]) -> str:
    """Quartile counts of the PIT, its mean, and the stop's probability beside the share within 0.25 D."""
    pit = np.array([r["pit"] for r in rows])
    counts = " / ".join(str(c) for c in np.histogram(pit, bins=[0.0, 0.25, 0.5, 0.75, 1.0])[0])
    p_stop, within = np.mean([r["p_within"] for r in rows]), np.mean([r["within"] for r in rows])
    text = (
        f"n {len(rows)}; PIT by quartile {counts} (each {len(rows) / 4:.1f} if calibrated), mean {pit.mean():.2f}; "
        f"P(filed within 0.25 D) at the stop, mean {p_stop:.2f}, filed within 0.25 D {within:.0%}"
    )
    if "signed_error_m" in rows[0]:
        text += f"; filed M - true M, mean {np.mean([r['signed_error_m'] for r in rows]):+.2f} D"
    return text


def summary_by_curve(rows: list[dict]) -> str:
    """:func:`summary` of all the rows, then of each acuity curve's when there are several."""
    curves = sorted({r["acuity_model"] for r in rows})
    lines = [summary(rows)]
    if len(curves) > 1:
        lines += [f"  {c}: " + summary([r for r in rows if r["acuity_model"] == c]) for c in curves]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", default=DEFAULT_PROTOCOL, help="shipped name or .toml path")
    parser.add_argument("--population", default="adult-clinic")
    parser.add_argument("--ages", default="0,120", help="youngest,oldest (years, inclusive)")
    parser.add_argument("--cases", type=int, default=30, help="patients within the ages")
    parser.add_argument("--seed", type=int, default=1, help="population seed")
    parser.add_argument("--acuity-model", choices=sorted(ACUITY_MODELS), help="every patient's acuity-blur curve")
    args = parser.parse_args(argv)
    try:
        youngest, oldest = (float(a) for a in args.ages.split(","))
    except ValueError:
        print(f"--ages: expected two numbers, youngest,oldest; got {args.ages!r}", file=sys.stderr)
        return 2
    protocol, rows, case_id = load_protocol(args.protocol), [], 0
    while len(rows) < args.cases and case_id < 100 * args.cases:
        case = with_curve(validation_case(args.population, case_id, args.seed), args.acuity_model)
        row = session_end(protocol, case) if youngest <= case.age_years <= oldest else None
        if row is not None:
            rows.append(row)
        case_id += 1
    curve = "" if args.acuity_model is None else f", every patient with the {args.acuity_model} acuity curve"
    print(
        f"SIMULATED patients: {protocol.name}, {args.population} aged {youngest:g}-{oldest:g} (seed {args.seed}){curve}"
    )
    print(summary_by_curve(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
