"""Where the 95% region misses, per answer model, and the patient's time per lens device.

Reads a store written by ``visiontune validate --answer-model ...`` (read-only) and prints, per
population and answer model:

* the misses of the 95% region (truth outside it): how many, how many stopped by the precision
  stop, how many miss mainly in ``M`` (``|ΔM| > |ΔJ|``), the median signed ``ΔM`` of the misses
  (negative: the lens filed is more minus than the truth);
* the same sessions' patient time re-timed at each device's seconds per change
  (:mod:`visiontune.refraction.lens_devices`): the answers' seconds (the stored time less the
  protocol's price of its changes) plus ``d x changes``; median and 90th percentile. The sessions
  chose their questions at the protocol's price, so this is the time of the same questions at
  another device, not of a session the device would have run.

With ``--rerun N`` it refracts again (deterministic: the same answers) up to N missed sessions
per model and prints the posterior's median comparison sensitivity ``κ`` (the particles' ``ln κ``
column) and the share of comparisons answered 1 / 2 / =, to see which posterior is
over-confident and why.

    python benchmarks/answer_model_misses.py docs/results/answer-models-clinical-sloan-compare.sqlite \
        --protocol clinical-sloan-compare [--rerun 5]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from contextlib import closing

import numpy as np

from visiontune.refraction.answer_models import answer_model_by_name
from visiontune.refraction.lens_devices import DEVICE_KINDS
from visiontune.refraction.loop import MemoryLog, Refraction
from visiontune.refraction.optics_model import _column, has_column
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.start import StartingPoint
from visiontune.validation.answer_validation import _TimedAnswers
from visiontune.validation.clinic import validation_case


def _runs(path: str) -> dict[tuple[str, str], list[tuple[int, dict]]]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        query = "SELECT experiment, population, case_id, metrics FROM clinic_runs ORDER BY case_id"
        rows = db.execute(query).fetchall()
    out: dict[tuple[str, str], list[tuple[int, dict]]] = {}
    for experiment, population, case_id, metrics in rows:
        model = experiment.split("-answers-", 1)[1].split("-device-", 1)[0]
        out.setdefault((population, model), []).append((int(case_id), json.loads(metrics)))
    return out


def _rerun(protocol, population: str, case_id: int, seed: int, model: str) -> dict:
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
    kappa = None
    if has_column(post.theta, "log_sensitivity"):
        col = post.theta[:, _column("log_sensitivity").index]
        order = np.argsort(col)
        cdf = np.cumsum(post.weights[order]) / post.weights.sum()
        kappa = float(np.exp(col[order][np.searchsorted(cdf, 0.5)]))
    answers = [t.comparison for t in refraction.trials() if t.comparison is not None]
    shares = {a: answers.count(a) / max(len(answers), 1) for a in ("1", "2", "=")}
    return {"kappa": kappa, "shares": shares, "comparisons": len(answers)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--protocol", required=True, help="the protocol the store ran (name or .toml path)")
    parser.add_argument("--seed", type=int, default=1, help="population seed of the validation (default 1)")
    parser.add_argument("--rerun", type=int, default=0, help="refract again up to N missed sessions per model")
    args = parser.parse_args()
    protocol = load_protocol(args.protocol)
    price = protocol.comparisons.lens_change_seconds
    for (population, model), runs in sorted(_runs(args.store).items()):
        done = [(i, r) for i, r in runs if "refused" not in r]
        misses = [(i, r) for i, r in done if not r.get("covered_95", True)]
        in_m = sum(r["error_m_d"] > r["error_j_d"] for _, r in misses)
        precision = sum(r["stopped_by"] == "precision" for _, r in misses)
        signed = np.median([r["signed_error_m_d"] for _, r in misses]) if misses else float("nan")
        answer_s = np.array([r["patient_s"] - price * r["lens_changes"] for _, r in done])
        changes = np.array([r["lens_changes"] for _, r in done])
        times = "  ".join(
            f"{k} {np.median(answer_s + d.change_seconds * changes):.0f}/"
            f"{np.percentile(answer_s + d.change_seconds * changes, 90):.0f}"
            for k, d in DEVICE_KINDS.items()
        )
        print(
            f"{population:13s} {model:17s} n {len(done):3d}  misses {len(misses):2d} (precision stop {precision}, "
            f"mainly M {in_m}, median signed dM {signed:+.2f})  time median/p90 s: {times}"
        )
        for case_id, _ in misses[: args.rerun]:
            found = _rerun(protocol, population, case_id, args.seed, model)
            kappa = "-" if found["kappa"] is None else f"{found['kappa']:.1f}"
            print(
                f"    case {case_id}: posterior median kappa {kappa}; comparisons {found['comparisons']}, answered "
                + " / ".join(f"{a} {100 * s:.0f}%" for a, s in found["shares"].items())
            )


if __name__ == "__main__":
    main()
