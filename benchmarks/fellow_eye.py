"""The second eye with and without the first eye's priors of the patient (SIMULATED patients).

For each of ``--cases`` patients of each population from case ``--first`` (population seed ``--seed``), the right
eye is the validation's case (:func:`~visiontune.validation.clinic.validation_case`) and the left eye its
fellow (:func:`~visiontune.session.simulated_visit.fellow_eye_case`, the visit's simulated left eye: the
same person, a refraction near the right eye's), both refracted with ``--protocol`` through the one
trial loop: the right eye once, the left eye twice, from the protocol as it is and from the protocol
with the patient's priors from the right eye's posterior
(:func:`~visiontune.refraction.fellow_eye.fellow_eye_protocol`, what ``model.fellow_eye_prior`` does in
a visit). Printed per population: the patient's time (trial frame, the protocol's seconds), answers,
lens changes, the share within 0.25 / 0.50 D, the 95% region's coverage, young patients over-minused
by more than 0.25 D, the left eye's start as it is, and the paired difference of the left eye's time
(mean, bootstrap 95% interval, sessions shorter / longer). ``--given-truth all`` adds the left eye with
the patient's ``VA*``, slope and ``κ`` nearly known (:func:`given_truth`): what no prior from the right eye
can better; ``acuity``, ``slope`` or ``kappa`` gives one of them.

Run (three sessions a patient, 3-6 s each on a shared core):
    OPENBLAS_NUM_THREADS=1 python benchmarks/fellow_eye.py --populations adult-clinic,young --cases 50 --jobs 2
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from joblib import Parallel, delayed

from visiontune.errors import InvalidInputError
from visiontune.optics.accommodation import YOUNG_AGE_YEARS
from visiontune.refraction.fellow_eye import INTEROCULAR_SD, fellow_eye_protocol, protocol_with_patient_priors
from visiontune.refraction.protocol import DEFAULT_PROTOCOL, load_protocol
from visiontune.session.simulated_visit import fellow_eye_case
from visiontune.validation.clinic import TimedPresenter, case_metrics, case_refraction, validation_case

VISIT_SEED_OFFSET = 1000  # the left eye of case i is drawn with visit seed 1000 + i


def _refract(protocol, case):
    refraction = case_refraction(protocol, case)
    patient = case.patient(protocol.n_alternatives)
    presenter = TimedPresenter(patient)
    result = refraction.run(presenter)
    return refraction, case_metrics(refraction, result, case, patient, presenter.decision_s)


#: ``--given-truth``: which of the patient's own unknowns are given.
GIVEN = {"all": ("acuity", "slope", "kappa"), "acuity": ("acuity",), "slope": ("slope",), "kappa": ("kappa",)}


def given_truth(case, what: str = "all") -> dict:
    """The patient's own unknowns ``GIVEN[what]`` as nearly known: ``VA*`` and the slope at the patient's,
    ``κ`` at the Eq. 11 patient's 1 (the validation's comparison answers), each with a narrow prior."""
    values = {
        "acuity": ("model", {"best_acuity_mean": round(case.best_corrected_logmar, 4), "best_acuity_sd": 0.02}),
        "slope": (
            "psychometric.slope_prior",
            {"distribution": "lognormal", "median": round(case.slope, 4), "sigma": 0.05},
        ),
        "kappa": (
            "comparisons.model",
            {"sensitivity_median": 1.0, "sensitivity_sigma": 0.05, "sensitivity_second_median": 0.0},
        ),
    }
    return dict(values[name] for name in GIVEN[what])


def patient_rows(
    protocol_name: str, population: str, case_id: int, seed: int, truth: str | None, between_eyes: dict
) -> dict | None:
    """The right eye, the left eye as the protocol is, the left eye from the right eye's priors (and with
    ``truth``, the left eye with :func:`given_truth`)."""
    protocol = load_protocol(protocol_name)
    od = validation_case(population, case_id, seed)
    try:
        os_case = fellow_eye_case(od, VISIT_SEED_OFFSET + case_id, protocol)
        od_refraction, od_row = _refract(protocol, od)
        _, os_row = _refract(protocol, os_case)
    except InvalidInputError:  # an eye or a start the session refuses: the clinician refracts by hand
        return None
    posterior = od_refraction.engine.posterior(od_refraction.trials())
    _, fellow_row = _refract(fellow_eye_protocol(protocol, posterior, "OD", between_eyes), os_case)
    rows = {"od": od_row, "os": os_row, "os_fellow": fellow_row}
    if truth:
        given = protocol_with_patient_priors(protocol, given_truth(os_case, truth), "the truth")
        rows["os_truth"] = _refract(given, os_case)[1]
    return rows


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _row(label: str, runs: list[dict], start: bool = False) -> str:
    pre = "start_" if start else ""
    err = np.array([r[pre + "error_d"] for r in runs])
    young = [r for r in runs if r["age_years"] is not None and r["age_years"] <= YOUNG_AGE_YEARS]
    over = sum(r[pre + "signed_error_m_d"] < -0.25 - 1e-9 for r in young)
    within = f"{_pct(np.mean(err <= 0.25 + 1e-9))} / {_pct(np.mean(err <= 0.50 + 1e-9))}"
    if start:
        return f"| {label} | {len(runs)} | - | - | - | - | {within} | - | {over} of {len(young)} |"
    s = np.array([r["patient_s"] for r in runs])
    return (
        f"| {label} | {len(runs)} | {np.median(s):.0f} / {np.percentile(s, 90):.0f} | {s.mean():.0f} | "
        f"{np.median([r['answers'] for r in runs]):.0f} | {np.median([r['lens_changes'] for r in runs]):.0f} | "
        f"{within} | {_pct(np.mean([r['covered_95'] for r in runs]))} | {over} of {len(young)} |"
    )


def paired(rows: list[dict], seed: int = 0) -> str:
    """The left eye's time from the right eye's priors minus as the protocol is: mean, bootstrap 95%."""
    d = np.array([r["os_fellow"]["patient_s"] - r["os"]["patient_s"] for r in rows])
    rng = np.random.default_rng(seed)
    boot = [rng.choice(d, len(d)).mean() for _ in range(5000)]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return (
        f"left eye, from the right eye's priors minus as it is: {d.mean():+.0f} s a patient (bootstrap 95% "
        f"{lo:+.0f} to {hi:+.0f} s), shorter in {(d < 0).sum()}, longer in {(d > 0).sum()} of {len(d)}"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", default=DEFAULT_PROTOCOL)
    ap.add_argument("--populations", default="adult-clinic,young")
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--first", type=int, default=0, help="the first case (default 0)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument(
        "--given-truth",
        choices=sorted(GIVEN),
        help="also the left eye with these of the patient's own unknowns nearly known",
    )
    ap.add_argument(
        "--interocular-va-sd",
        type=float,
        default=INTEROCULAR_SD["best_acuity"],
        help="how far VA* may differ between the eyes, logMAR (default %(default)s)",
    )
    args = ap.parse_args(argv)
    if args.first < 0 or args.cases < 1 or args.interocular_va_sd < 0.0:
        ap.error(
            f"--first must be 0 or more, --cases 1 or more and --interocular-va-sd 0 or more (logMAR); got "
            f"{args.first}, {args.cases} and {args.interocular_va_sd:g}"
        )
    between_eyes = {**INTEROCULAR_SD, "best_acuity": args.interocular_va_sd}
    load_protocol(args.protocol)
    print(
        f"SIMULATED patients; protocol {args.protocol}; population seed {args.seed}; cases {args.first} to "
        f"{args.first + args.cases - 1} of each population; VA* may differ between the eyes by "
        f"{args.interocular_va_sd:g} logMAR (sd)\n"
    )
    for population in [p.strip() for p in args.populations.split(",") if p.strip()]:
        rows = Parallel(n_jobs=args.jobs)(
            delayed(patient_rows)(args.protocol, population, i, args.seed, args.given_truth, between_eyes)
            for i in range(args.first, args.first + args.cases)
        )
        rows = [r for r in rows if r is not None]
        print(f"{population}\n")
        print(
            "| eye | n | trial frame s median / p90 | mean s | answers | lens changes | within 0.25 / 0.50 D "
            "| 95% coverage | young over-minused |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        print(_row("right eye", [r["od"] for r in rows]))
        print(_row("left eye, the protocol as it is", [r["os"] for r in rows]))
        print(_row("left eye, the patient's priors from the right", [r["os_fellow"] for r in rows]))
        if args.given_truth:
            known = {"all": "VA*, slope and κ", "acuity": "VA*", "slope": "the slope", "kappa": "κ"}[args.given_truth]
            print(_row(f"left eye, {known} nearly known", [r["os_truth"] for r in rows]))
        started = [r["os"] for r in rows if "start_error_d" in r["os"]]
        if started:
            print(_row("left eye, the starting prescription as it is", started, start=True))
        print(f"\n{paired(rows)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
