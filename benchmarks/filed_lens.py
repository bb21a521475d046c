"""Which trial lens to file: the estimate rounded, or the most probable within 0.25 D, on the same sessions.

For each simulated patient of ``--population`` (the validation's cases: population seed ``--seed``,
the first ``--cases``) refracted with ``--protocol`` through the one trial loop, the lens filed at
the end is read both ways from the same posterior (:meth:`OpticsEngine.filed_lens
<visiontune.refraction.optics_engine.OpticsEngine.filed_lens>` with ``rule`` ``"rounded"`` and
``"most-probable"``): the filing does not change the questions, the estimate or the stop, so the
two are paired patient by patient. It prints, by age, the share within 0.25 / 0.50 D of the truth
for each and for the exact (unrounded) estimate, the patients only one of the two filings brings
within 0.25 D (with the exact two-sided McNemar p on them), and the young patients (35 or less)
over-minused by more than 0.25 D.

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/filed_lens.py --protocol clinical-sloan-compare --cases 100
"""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import binomtest
from validation_cases import by_age, case_parser

from visiontune.optics.accommodation import YOUNG_AGE_YEARS
from visiontune.refraction.protocol import load_protocol
from visiontune.validation.clinic import TimedPresenter, case_refraction, validation_case

#: :data:`validation_cases.AGES` with the presbyopes split where accommodation ends.
AGES = ((0.0, 35.0, "under 35"), (35.0, 50.0, "35-50"), (50.0, 60.0, "50-60"), (60.0, 200.0, "60 and over"))
RULES = ("rounded", "most-probable")


def refract(protocol_name: str, population: str, case_id: int, seed: int) -> dict:
    """Refract case ``case_id`` as ``visiontune validate`` does; the signed ``M`` error and the error
    (power-vector distance to the truth, D) of each filing and of the exact estimate."""
    protocol = load_protocol(protocol_name)
    case = validation_case(population, case_id, seed)
    refraction = case_refraction(protocol, case)
    refraction.run(TimedPresenter(case.patient(protocol.n_alternatives)))
    engine, trials = refraction.engine, refraction.trials()
    draws = engine.correction_draws(trials)
    truth = case.true_rx.power_vector_array()
    row = {"age": case.age_years, "exact": float(np.linalg.norm(draws.best_correction() - truth))}
    for rule in RULES:
        pv = engine.filed_lens(draws, rule).power_vector_array()
        row[rule] = float(np.linalg.norm(pv - truth))
        row[rule + " M"] = float(pv[0] - truth[0])
    return row


def main() -> None:
    args = case_parser(__doc__.splitlines()[0]).parse_args()
    rows = Parallel(n_jobs=args.jobs)(
        delayed(refract)(args.protocol, args.population, i, args.seed) for i in range(args.cases)
    )
    print(
        f"SIMULATED patients: {load_protocol(args.protocol).name}, {args.population}, {args.cases} cases, "
        f"population seed {args.seed}\n"
    )
    print(
        "| patients | n | rounded: within 0.25 / 0.50 D | most probable: within 0.25 / 0.50 D | exact estimate "
        "within 0.25 D | within 0.25 D with one only (rounded, most probable; McNemar p) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    groups = by_age(rows, AGES)
    for label, group in groups:
        if not group:
            continue
        err = {k: np.array([r[k] for r in group]) for k in (*RULES, "exact")}
        within = {k: err[k] <= 0.25 + 1e-9 for k in err}
        only = (
            int(np.sum(within["rounded"] & ~within["most-probable"])),
            int(np.sum(within["most-probable"] & ~within["rounded"])),
        )
        p = binomtest(only[0], sum(only)).pvalue if sum(only) else 1.0
        cells = [f"{100 * np.mean(within[k]):.0f}% / {100 * np.mean(err[k] <= 0.5 + 1e-9):.0f}%" for k in RULES]
        print(
            f"| {label} | {len(group)} | {cells[0]} | {cells[1]} | {100 * np.mean(within['exact']):.0f}% | "
            f"{only[0]}, {only[1]}; p = {p:.3f} |"
        )
    young = [r for r in rows if r["age"] is None or r["age"] <= YOUNG_AGE_YEARS]
    over = {k: sorted(round(-r[k + " M"], 3) for r in young if r[k + " M"] < -0.25 - 1e-9) for k in RULES}
    print(
        f"\nyoung (35 or less, or of unknown age: {len(young)}) over-minused by more than 0.25 D: "
        f"rounded {len(over['rounded'])} {over['rounded']}, most probable {len(over['most-probable'])} "
        f"{over['most-probable']} (D of M)"
    )


if __name__ == "__main__":
    main()
