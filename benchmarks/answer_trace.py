"""One simulated session, question by question, with the answer model's lapses marked.

Refracts case ``--case`` of ``--population`` (population seed ``--seed``, as ``visiontune validate``
draws it) with ``--protocol``, the patient answering by ``--answer-model``, and prints every trial:
its index, ``L`` where the patient's attention had lapsed (``lapse-runs``: the answer model's two-state
chain, :mod:`visiontune.refraction.answer_models`), the question (a letter, a chart line, a
comparison), its size (logMAR), the lens or lenses and the answer; then the true correction, the start
and the lens filed. The answers are the validation's own (keyed), so the session is the one its store
scored. With a protocol that reads lapses as runs (``model.lapse_run_onset``), each row ends with the
model's posterior probability that the patient was lapsed at that answer, ``P(L)``
(:attr:`~visiontune.refraction.optics_model.ParticlePosterior.lapsed_probability`, the answers up to it),
and the session ends with its mean at the answers the patient lapsed and at the others.
SIMULATED patient.

    OPENBLAS_NUM_THREADS=1 python benchmarks/answer_trace.py --protocol P --population young --case 8 \
        --seed 2 --answer-model lapse-runs
"""

from __future__ import annotations

import argparse

from visiontune.optics import Prescription
from visiontune.refraction.answer_models import AnswerModelPresenter, answer_model_by_name
from visiontune.refraction.mixed_engine import build_optics_engine
from visiontune.refraction.protocol import load_protocol
from visiontune.validation.clinic import case_refraction, validation_case


def trial_line(trial, lapsed: bool) -> str:
    """One printed row: index, lapse mark, kind, size, lens(es) and answer."""
    mark = "L" if lapsed else " "
    if trial.line_correct is not None:
        what = f"line       {trial.lens}  read {trial.line_correct}"
    elif trial.comparison is not None:
        what = f"comparison {trial.lens}  or  {trial.lens2}  -> {trial.comparison}"
    else:
        what = f"letter     {trial.lens}  {'right' if trial.correct else 'wrong'}"
    return f"{trial.index:4d} {mark} s={trial.s_logmar:+.2f}  {what}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", default="clinical-sloan-lines-two-formulas")
    parser.add_argument("--population", default="young")
    parser.add_argument("--case", type=int, default=0, help="case id (0-based, as the validation's store)")
    parser.add_argument("--seed", type=int, default=1, help="population seed (default 1, the validation's)")
    parser.add_argument("--answer-model", default="model")
    args = parser.parse_args()
    protocol = load_protocol(args.protocol)
    case = validation_case(args.population, args.case, args.seed)
    refraction = case_refraction(protocol, case)
    presenter = AnswerModelPresenter(case.patient(protocol.n_alternatives), answer_model_by_name(args.answer_model))
    result = refraction.run(presenter)
    print(f"SIMULATED patient: {args.population} case {args.case} (seed {args.seed}), age {case.age_years:.0f}")
    print(f"true correction {case.true_rx}; start {case.start_rx} ({case.start_source})")
    trials = refraction.trials()
    engine = None
    if protocol.model.lapse_runs is not None:
        engine = build_optics_engine(protocol, refraction.start_point, refraction.seed)
    read = {True: [], False: []}
    for k, trial in enumerate(trials):
        lapsed = presenter.answers.lapsed(trial.index)
        row = trial_line(trial, lapsed)
        if engine is not None:
            p = engine.lapsed_probability(trials[: k + 1])
            read[lapsed].append(p)
            row += f"  P(L) {p:.2f}"
        print(row)
    if engine is not None:
        means = {k: f"{sum(v) / len(v):.2f} over {len(v)}" if v else "-" for k, v in read.items()}
        print(f"mean P(L): at the lapsed answers {means[True]}, at the others {means[False]}")
    filed = Prescription(**result["rounded"])
    print(f"filed {filed} after {result['trials_used']} answers, stopped by {result['stopped_by']}")


if __name__ == "__main__":
    main()
