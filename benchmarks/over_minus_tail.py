"""Is the posterior's plus tail of ``M`` calibrated where over-minus is guarded, and how many over-minus?

For each simulated patient of ``--population`` (the validation's cases: population seed ``--seed``,
the first ``--cases``) refracted with ``--protocol`` through the one trial loop, in the sessions the
over-minus guard covers (aged 35 or less, or of unknown age, with ``model.over_minus_guard =
"young"``), at the session's end: the probability integral transform of the true ``M``,
``u = P(M* <= M_true | answers)`` under the weighted draws the estimate reads (uniform on [0, 1]
when the posterior is calibrated: Dawid 1984, *Statistical theory: the prequential approach*,
J. R. Stat. Soc. A 147:278-292); the posterior probability that the lens filed is more minus than
the correction by over 0.25 D, ``P(M* > M(lens) + 0.25)``, whose sum over sessions is the number
over-minused a calibrated posterior expects; and the number actually over-minused by over 0.25 D,
with the mean signed error of ``M`` (lens minus truth: positive is more plus) and the share within
0.25 D.

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/over_minus_tail.py --population young --cases 100
"""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed
from validation_cases import case_parser

from visiontune.refraction.optics_engine import OVER_MINUS_D, over_minus_probability
from visiontune.refraction.protocol import load_protocol
from visiontune.validation.clinic import TimedPresenter, case_refraction, validation_case


def session_end(protocol_name: str, population: str, case_id: int, seed: int) -> dict | None:
    """Refract case ``case_id`` as ``visiontune validate`` does; None when the guard does not cover it."""
    protocol = load_protocol(protocol_name)
    case = validation_case(population, case_id, seed)
    refraction = case_refraction(protocol, case)
    if not refraction.engine.guards_over_minus():
        return None
    refraction.run(TimedPresenter(case.patient(protocol.n_alternatives)))
    draws = refraction.engine.correction_draws(refraction.trials())
    m = draws.theta[:, 0]
    truth = case.true_rx.power_vector_array()
    rounded = refraction.current_estimate().rounded
    filed = rounded.power_vector_array()
    return {
        "u": float(draws.weights @ (m <= truth[0])),
        "risk": over_minus_probability(draws, rounded),
        "signed_m": float(filed[0] - truth[0]),
        "error": float(np.linalg.norm(filed - truth)),
    }


def main() -> None:
    args = case_parser(__doc__.splitlines()[0]).parse_args()
    rows = Parallel(n_jobs=args.jobs)(
        delayed(session_end)(args.protocol, args.population, i, args.seed) for i in range(args.cases)
    )
    rows = [r for r in rows if r is not None]
    print(
        f"SIMULATED patients: {args.protocol}, {args.population}, the first {args.cases} cases, population seed "
        f"{args.seed}; {len(rows)} sessions the over-minus guard covers"
    )
    if not rows:
        return
    u = np.array([r["u"] for r in rows])
    print("u = P(M* <= true M) at the end, by tenths:", np.histogram(u, bins=10, range=(0.0, 1.0))[0].tolist())
    print(
        f"truth beyond the posterior's 97.5% quantile of M: {int(np.sum(u > 0.975))} (a calibrated posterior: "
        f"{0.025 * len(rows):.1f}); beyond 99%: {int(np.sum(u > 0.99))} ({0.01 * len(rows):.1f}); below 2.5%: "
        f"{int(np.sum(u < 0.025))} ({0.025 * len(rows):.1f})"
    )
    over = sum(r["signed_m"] < -OVER_MINUS_D for r in rows)
    print(
        f"over-minused by over 0.25 D: {over}; the posterior expected {sum(r['risk'] for r in rows):.2f} "
        f"(the sum of P(M* > M(lens) + 0.25))"
    )
    print(
        f"mean signed error of M (lens - truth, D): {np.mean([r['signed_m'] for r in rows]):+.3f}; within 0.25 D: "
        f"{np.mean([r['error'] <= 0.25 for r in rows]):.0%}"
    )


if __name__ == "__main__":
    main()
