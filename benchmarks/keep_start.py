"""Which lens to file when the start is nearly as good: rules read on the same sessions' last posteriors.

Each simulated patient (the validation's cases: population seed ``--seed``, the first ``--cases`` of each
of ``--populations``, answering by each of ``--answer-models``) is refracted with ``--protocol`` with its
``model.keep_start_margin`` taken out, through the one trial loop. On the last posterior the lens the
rules file ``L`` and the start ``S`` are weighed, and each rule below either keeps ``S`` or files ``L``
(a start more minus than the over-minus guard's lens is never kept):

- ``margin δ``: keep ``S`` when ``P(|S - P*| <= 0.25) >= P(|L - P*| <= 0.25) - δ`` (``model.keep_start_margin``);
- ``shown τ``: keep ``S`` unless ``P(|L - P*| < |S - P*|) >= τ`` (the answers show ``L`` nearer, as the
  axis is kept: ``OpticsEngine._kept_axis``);
- ``expected δ``: keep ``S`` when ``E|S - P*| <= E|L - P*| + δ``.

The filing does not change the questions or the posterior, so the rules are paired patient by patient
(the shipped rule also changes the stop, which waits on the lens it would file: the validation measures
that). Printed per population and answer model: within 0.25 D, worse than the start (further from the
truth, by any amount) and young patients (35 or less) over-minused by more than 0.25 D, as
``within / worse / over-minused``.

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/keep_start.py --populations adult-clinic,young --cases 100
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
from joblib import Parallel, delayed

from visiontune.errors import InvalidInputError
from visiontune.optics.accommodation import YOUNG_AGE_YEARS
from visiontune.refraction.answer_models import AnswerModelPresenter, answer_model_by_name
from visiontune.refraction.optics_engine import OVER_MINUS_D, filed_within_probability
from visiontune.refraction.protocol import load_protocol
from visiontune.validation.clinic import TimedPresenter, case_refraction, validation_case

RULES = (("as filed", None), ("margin", 0.05), ("margin", 0.15), ("shown", 0.8), ("shown", 0.95), ("expected", 0.02))


def refract(protocol_name: str, population: str, case_id: int, answer_model: str, seed: int) -> dict | None:
    """One session without the margin; what each rule needs of its last posterior. None for a patient
    without a start or whose start the session refuses."""
    protocol = load_protocol(protocol_name)
    protocol = dataclasses.replace(protocol, model=dataclasses.replace(protocol.model, keep_start_margin=None))
    case = validation_case(population, case_id, seed)
    if case.start_rx is None:
        return None
    try:
        refraction = case_refraction(protocol, case)
    except InvalidInputError:  # the start outside the range: refused, as the validation does
        return None
    patient = case.patient(protocol.n_alternatives)
    presenter = (
        TimedPresenter(patient)
        if answer_model == "model"
        else AnswerModelPresenter(patient, answer_model_by_name(answer_model))
    )
    refraction.run(presenter)
    engine = refraction.engine
    draws = engine.correction_draws(refraction.trials())
    filed, start, truth = engine.filed_lens(draws), case.start_rx, case.true_rx.power_vector_array()
    pl, ps = filed.power_vector_array(), start.power_vector_array()
    w = draws.weights / draws.weights.sum()
    to_l, to_s = (np.linalg.norm(draws.theta[:, :3] - x, axis=1) for x in (pl, ps))
    guard_ok = not engine.guards_over_minus() or ps[0] >= pl[0] - 1e-9
    return {
        "young": case.age_years is not None and case.age_years <= YOUNG_AGE_YEARS,
        "guard_ok": guard_ok,
        "p_l": filed_within_probability(draws, filed),
        "p_s": filed_within_probability(draws, start),
        "nearer": float(w @ (to_l < to_s)),
        "e_l": float(w @ to_l),
        "e_s": float(w @ to_s),
        "err_l": float(np.linalg.norm(pl - truth)),
        "err_s": float(np.linalg.norm(ps - truth)),
        "m_l": float(pl[0] - truth[0]),
        "m_s": float(ps[0] - truth[0]),
    }


def keeps(row: dict, rule: str, x: float | None) -> bool:
    """Whether ``rule`` (with its parameter ``x``) files the start for this session."""
    if rule == "as filed" or not row["guard_ok"]:
        return False
    if rule == "margin":
        return row["p_s"] >= row["p_l"] - x - 1e-12
    if rule == "shown":
        return row["nearer"] < x
    return row["e_s"] <= row["e_l"] + x


def cell(rows: list[dict], rule: str, x: float | None) -> str:
    within = worse = over = 0
    for r in rows:
        kept = keeps(r, rule, x)
        err, m = (r["err_s"], r["m_s"]) if kept else (r["err_l"], r["m_l"])
        within += err <= 0.25 + 1e-9
        worse += err > r["err_s"] + 1e-9
        over += r["young"] and m < -OVER_MINUS_D - 1e-9
    n = len(rows)
    return f"{100 * within / n:.0f}% / {100 * worse / n:.0f}% / {over}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", default="clinical-sloan-lines-two-formulas")
    parser.add_argument("--populations", default="adult-clinic,young")
    parser.add_argument("--answer-models", default="model")
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1, help="population seed (default 1, the validation's)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    groups = [(p, m) for m in args.answer_models.split(",") for p in args.populations.split(",")]
    rows = Parallel(n_jobs=args.jobs)(
        delayed(refract)(args.protocol, p, i, m, args.seed) for p, m in groups for i in range(args.cases)
    )
    print(
        f"SIMULATED patients: {args.protocol} without keep_start_margin, population seed {args.seed}, "
        f"the first {args.cases} of each; within 0.25 D / worse than the start / young over-minused\n"
    )
    names = [rule if x is None else f"{rule} {x:g}" for rule, x in RULES]
    print("| population | answer model | n | " + " | ".join(names) + " |")
    print("| --- | --- | ---: |" + " --- |" * len(RULES))
    for k, (population, model) in enumerate(groups):
        mine = [r for r in rows[k * args.cases : (k + 1) * args.cases] if r is not None]
        cells = " | ".join(cell(mine, rule, x) for rule, x in RULES)
        print(f"| {population} | {model} | {len(mine)} | {cells} |")


if __name__ == "__main__":
    main()
