"""What a session learns of each SIMULATED patient's answer bias and "equal" band.

Refracts again (deterministic: the same answers as the store's sessions) the first ``--cases``
patients of each population under each answer model, with a protocol whose comparison model infers
the bias toward the more minus lens ``β`` and the band ``τ`` (``[comparisons.model] minus_bias_sigma``,
``indifference_sigma``; :mod:`visiontune.refraction.comparisons`), and prints per population and answer
model the median over patients of the posterior mean of ``β``, of the posterior median of ``τ``, and
of the number of comparisons, beside the simulated patient's own values (``minus_bias``,
``indifference`` of :mod:`visiontune.refraction.answer_models`). Every patient is SIMULATED.

    python benchmarks/answer_bias_posteriors.py --protocol docs/results/protocols/clinical-sloan-lines-bias.toml \
        --answer-model model,less-equal,minus-bias --populations adult-clinic,young --cases 5
"""

from __future__ import annotations

import argparse

import numpy as np

from visiontune.refraction.answer_models import answer_model_by_name
from visiontune.refraction.estimate import weighted_quantile
from visiontune.refraction.loop import MemoryLog, Refraction
from visiontune.refraction.optics_model import LOG_INDIFFERENCE, MINUS_BIAS, has_column
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.validation.answer_validation import _TimedAnswers
from visiontune.validation.clinic import validation_case


def posterior_of_answers(protocol, population: str, case_id: int, seed: int, model: str) -> dict:
    """The session of one simulated patient run again: posterior mean ``β``, median ``τ`` (None
    where the protocol does not infer them) and the number of comparisons."""
    case = validation_case(population, case_id, seed)
    refraction = Refraction(
        MemoryLog(),
        protocol,
        seed=case.seed,
        simulated=True,
        start=StartingPoint(case.start_rx, case.start_source, case.age_years),
    )
    refraction.run(_TimedAnswers(case.patient(protocol.n_alternatives), answer_model_by_name(model)))
    post = refraction.engine.posterior(refraction.trials())
    w = post.weights
    beta = float(w @ post.theta[:, MINUS_BIAS]) if has_column(post.theta, "minus_bias") else None
    tau = None
    if has_column(post.theta, "log_indifference"):
        tau = float(np.exp(weighted_quantile(post.theta[:, LOG_INDIFFERENCE], w, 0.5)))
    comparisons = sum(t.comparison is not None for t in refraction.trials())
    return {"beta": beta, "tau": tau, "comparisons": comparisons}


def _median(values) -> str:
    values = [v for v in values if v is not None]
    return "-" if not values else f"{np.median(values):+.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", required=True, help="protocol name or .toml path")
    parser.add_argument("--answer-model", default="model,less-equal,minus-bias")
    parser.add_argument("--populations", default="adult-clinic,young")
    parser.add_argument("--cases", type=int, default=5, help="patients per population (the first N)")
    parser.add_argument("--seed", type=int, default=1, help="population seed (default 1)")
    args = parser.parse_args()
    protocol = load_protocol(args.protocol)
    print("SIMULATED patients; medians over patients of the posterior mean β and posterior median τ")
    for population in args.populations.split(","):
        for model in args.answer_model.split(","):
            truth = answer_model_by_name(model)
            found = [posterior_of_answers(protocol, population, i, args.seed, model) for i in range(args.cases)]
            print(
                f"{population:13s} {model:17s} n {len(found):2d}  β {_median(f['beta'] for f in found)} "
                f"(patient {truth.minus_bias:+.2f})  τ {_median(f['tau'] for f in found)} "
                f"(patient {truth.indifference:.2f})  comparisons {np.median([f['comparisons'] for f in found]):.0f}"
            )


if __name__ == "__main__":
    main()
