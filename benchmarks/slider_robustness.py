"""A protocol with slider questions against patients who choose along the knob unlike its model.

`visiontune validate --protocol docs/results/protocols/clinical-sloan-compare-sliders.toml` scores
slider sessions on simulated patients who pick the clearest lens by the slider model's stated
choice (:class:`~visiontune.refraction.slider.SliderModel`: noise 0.03 logMAR, lapse 0.05). Here
the same patients (the validation's cases: population seed 1, the first ``--cases``) choose with
``--noise`` and ``--lapse`` of their own, through the one trial loop over an in-memory log, and the
table gives the share within 0.25 / 0.50 D (power-vector distance of the trial lens filed to the
truth), the median number of answers, the share stopped by the precision stop, the median patient
time, the median number of sliders asked, the median over sessions of the posterior median of the
patient's noise ``τ`` when the model infers it, and the coverage of the posterior's 95% region
``{P: |P - P̂| <= r_95}`` (:func:`visiontune.validation.clinic.case_metrics`, as the validation
measures it) over all sessions and over those the precision stop ended: an over-confident
posterior stops early with a region that misses the truth more often than 5%. Every patient here
is SIMULATED.

``--model-noise`` and ``--model-noise-sigma`` override the protocol's slider model (the noise, the
prior's median when inferred, and the σ of its logarithm, 0 for a fixed noise).

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/slider_robustness.py --noise 0.08 --lapse 0.15 --cases 100 --jobs 1
     [--model-noise 0.03 --model-noise-sigma 0]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
from joblib import Parallel, delayed

from visiontune.refraction.estimate import weighted_quantile
from visiontune.refraction.loop import SimulatedPresenter
from visiontune.refraction.optics_model import LOG_NOISE
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.slider import SliderModel
from visiontune.validation.clinic import case_metrics, case_refraction, validation_case

PROTOCOL = "docs/results/protocols/clinical-sloan-compare-sliders.toml"


def run(
    protocol_name: str, population: str, case_id: int, seed: int, patient_model: SliderModel, model_noise: dict
) -> tuple:
    """``(error (D), answers, stopped_by, patient seconds, truth in the 95% region, sliders, posterior
    median of τ (NaN when not inferred))`` of one simulated session; ``model_noise`` overrides
    fields of the protocol's slider model (``noise_logmar``, ``noise_sigma``)."""
    protocol = load_protocol(protocol_name)
    if model_noise:
        model = dataclasses.replace(protocol.sliders.model, **model_noise)
        protocol = dataclasses.replace(protocol, sliders=dataclasses.replace(protocol.sliders, model=model))
    case = validation_case(population, case_id, seed)
    refraction = case_refraction(protocol, case)
    patient = case.patient(protocol.n_alternatives)
    result = refraction.run(SimulatedPresenter(patient, slider_model=patient_model))
    m = case_metrics(refraction, result, case, patient, [])
    post = refraction.engine.posterior(refraction.trials())
    tau = (
        float(np.exp(weighted_quantile(post.theta[:, LOG_NOISE], post.weights, 0.5)))
        if post.noise_prior is not None
        else float("nan")
    )
    return (
        m["error_d"],
        int(result["trials_used"]),
        result["stopped_by"],
        refraction.patient_seconds(),
        m["covered_95"],
        int(result["sliders_used"]),
        tau,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", default=PROTOCOL)
    parser.add_argument("--population", default="adult-clinic")
    parser.add_argument("--noise", type=float, default=0.08, help="the patients' choice noise (logMAR)")
    parser.add_argument("--lapse", type=float, default=0.15, help="the patients' lapse rate")
    parser.add_argument(
        "--model-noise",
        type=float,
        default=None,
        help="the model's noise tau, the prior's median when inferred (default: the protocol's)",
    )
    parser.add_argument(
        "--model-noise-sigma",
        type=float,
        default=None,
        help="sigma of the prior of ln tau (0: fixed; default: the protocol's)",
    )
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1, help="population seed (default 1, the validation's)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    model = SliderModel(args.noise, args.lapse)
    override = {
        k: v for k, v in (("noise_logmar", args.model_noise), ("noise_sigma", args.model_noise_sigma)) if v is not None
    }
    rows = Parallel(n_jobs=args.jobs)(
        delayed(run)(args.protocol, args.population, i, args.seed, model, override) for i in range(args.cases)
    )
    used = load_protocol(args.protocol).sliders.model
    used = dataclasses.replace(used, **override)
    error = np.array([r[0] for r in rows])
    answers = np.array([r[1] for r in rows])
    stopped = np.array([r[2] == "precision" for r in rows])
    seconds = np.array([r[3] for r in rows])
    covered = np.array([r[4] for r in rows])
    sliders = np.array([r[5] for r in rows])
    tau = np.array([r[6] for r in rows])
    print(
        f"SIMULATED patients: {args.population}, {args.cases} cases, population seed {args.seed}; protocol "
        f"{args.protocol}; the patients choose along a knob with noise {args.noise:g} logMAR, lapse {args.lapse:g}; "
        f"the model's noise {used.noise_logmar:g} logMAR"
        + (f", inferred (prior sigma of ln tau {used.noise_sigma:g})" if used.infers_noise else ", fixed")
        + f", lapse {used.lapse:g}\n"
    )
    print(
        "| within 0.25 D | within 0.50 D | answers (median) | precision stop | patient time (median, s) "
        "| sliders (median) | posterior τ (median, logMAR) | 95% coverage | 95% coverage, precision-stopped |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    stopped_cover = f"{covered[stopped].mean():.0%} of {stopped.sum()}" if stopped.any() else "-"
    inferred = tau[np.isfinite(tau)]
    tau_text = f"{np.median(inferred):.3f} ({inferred.size} sessions)" if inferred.size else "-"
    print(
        f"| {np.mean(error <= 0.25):.0%} | {np.mean(error <= 0.5):.0%} | {np.median(answers):.0f} | "
        f"{stopped.mean():.0%} | {np.median(seconds):.0f} | {np.median(sliders):.0f} | {tau_text} | "
        f"{covered.mean():.0%} | {stopped_cover} |"
    )


if __name__ == "__main__":
    main()
