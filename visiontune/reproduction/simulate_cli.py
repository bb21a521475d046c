"""``visiontune simulate``: one SIMULATED refraction (Fauvel & Chalk (contextual BO) §5.3) from the command line.

    visiontune simulate --policy ucb-ald --slope 5 --trials 260 --seed 1 [--true-rx "S C"]
                        [--json out.json] [--plot out.png]

The run goes through the one trial loop (:func:`visiontune.reproduction.gp_refraction_run.run_refraction`:
the paper's GP protocol in :class:`visiontune.refraction.loop.Refraction` over an in-memory
trial log), the loop ``visiontune session run --simulate`` runs over the SQLite store.

``--policy`` takes the paper's rules (``ucb-ald``, ``ts-ald``, ...) on the paper's kernel, or a
VisionTune variant, ``ucb-ald-sl`` / ``ts-ald-sl`` (2 D SE lengthscales); a variant's kernel is
named in the output (docs/results/refraction-investigation.md). ``ucb-ald-pv`` (the power-vector
kernel), ``--inference ep`` and a reference letter size other than 0 are refused: the loop's GP
engine has none of them.

``--true-rx`` is ``"S C"`` or ``"S C x 180"``: the paper's model searches sphere and cylinder at
the fixed axis 180 (Fauvel & Chalk (contextual BO), §5.3), so another axis is refused (an optics protocol through
``visiontune session run --simulate --true-rx "S C x A"`` takes any axis).

``--protocol NAME`` runs a shipped protocol (or a .toml path) instead, e.g. ``clinical-sloan``
(the optics model, any axis): the simulated patient is case ``--seed`` of the ``adult-clinic``
population (:func:`visiontune.refraction.simulated.simulated_case`) starting from its own
autorefraction, ``--true-rx "S C x A"`` replaces its correction, and the session stops by the
protocol's rules (``--trials`` caps the answers).

Progress (trial k/n and the current estimate) goes to stderr; the summary (true and found
correction, their errors, the acuity through the found correction) to stdout, marked
SIMULATED. Bad values raise :class:`~visiontune.errors.VisionTuneError` subclasses, which
``visiontune.cli`` turns into one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import io
import json
import sys

from visiontune import output_guard
from visiontune._argparse import finite_float
from visiontune.errors import ConfigurationError, InvalidInputError
from visiontune.optics import Prescription
from visiontune.optics.notation import TRUTH, signed
from visiontune.refraction.loop import SimulatedPresenter
from visiontune.refraction.protocol import load_protocol
from visiontune.refraction.simulated import parse_true_rx, simulated_case
from visiontune.reproduction.analysis import pyplot
from visiontune.reproduction.gp_refraction_run import (
    DEFAULT_REFERENCE_LOGMAR,
    posterior_acuity_map,
    run_refraction,
)
from visiontune.validation.clinic import case_refraction

__all__ = ["add_arguments", "run", "write_plot"]

#: The paper experiment's settings (flag -> default); a protocol sets its own, so they are refused with one.
_PAPER_SETTINGS = {
    "--policy": "UCB-ALD",
    "--inference": "laplace",
    "--n-alternatives": 26,
    "--reference-logmar": DEFAULT_REFERENCE_LOGMAR,
    "--plot": None,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy",
        default=None,
        help="contextual binary policy (case-insensitive): the paper's ucb-ald, ts-ald, ... or a "
        "VisionTune variant: ucb-ald-sl / ts-ald-sl (2 D SE lengthscales, ends the stall of "
        "the paper's fit); ucb-ald-pv (power-vector kernel) is not in the one trial loop",
    )
    parser.add_argument(
        "--slope", type=finite_float, default=5.0, help="psychometric slope a, logMAR^-1 (> 0; default 5)"
    )
    parser.add_argument(
        "--protocol",
        default=None,
        help="run this protocol (shipped name or .toml path, e.g. clinical-sloan: any axis, from the "
        "simulated autorefraction) instead of the paper's experiment",
    )
    parser.add_argument(
        "--trials", type=int, default=None, help="number of answers (default 260; with --protocol, at most this many)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the correction, the answers and the policy")
    parser.add_argument(
        "--true-rx",
        default=None,
        metavar='"S C x A"',
        help='true correction as a clinician writes it ("-1.25 -0.50 x 30", "-1.25/-0.50x30"): '
        "any axis with --protocol; the paper's experiment searches sphere and cylinder within "
        '[-4, 4] at its fixed axis 180 ("S C" or "S C x 180"; default: random)',
    )
    parser.add_argument("--n-alternatives", type=int, default=None, help="letters to choose from (26; 10 for Sloan)")
    parser.add_argument(
        "--reference-logmar",
        type=finite_float,
        default=None,
        help=f"reference letter size s0 of the x-rule and the estimate (default {DEFAULT_REFERENCE_LOGMAR})",
    )
    parser.add_argument(
        "--inference",
        choices=("laplace", "ep"),
        default=None,
        help="GP inference: laplace (the one trial loop's; ep is refused)",
    )
    parser.add_argument("--json", default=None, metavar="PATH", help="write the run as JSON")
    parser.add_argument(
        "--plot",
        default=None,
        metavar="PATH",
        help="draw acuity vs trial and the trials on the posterior acuity map (PNG)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


def _parse_true_rx(text):
    """``"S C x A"`` as a clinician writes it (:meth:`Prescription.parse`: ``"-2.25/-1.25x180"``,
    a decimal comma), or ``"S C"`` at axis 180; another axis is refused: the paper's model
    searches at the fixed axis 180."""
    if text is None:
        return None
    try:
        rx = Prescription.parse(text, default_axis_deg=180.0)
    except InvalidInputError:
        raise InvalidInputError(
            f'--true-rx: expected "S C x A" (e.g. "-1.25 -0.50 x 180" or "-1.25/-0.50x180") or '
            f'"S C" (sphere and cylinder in diopters at the paper\'s fixed axis 180), got '
            f"{text!r}"
        ) from None
    if rx.cylinder_d != 0.0 and rx.axis_deg != 180.0:
        raise InvalidInputError(
            f"--true-rx: the paper's GP model searches at the fixed axis 180 (Fauvel & Chalk (contextual BO), §5.3), "
            f"got axis {rx.axis_deg:g} in {text!r}; for any axis use `visiontune session run --simulate "
            f'--protocol clinical-sloan --true-rx "S C x A"`'
        )
    return [rx.sphere_d, rx.cylinder_d]


def run(args: argparse.Namespace) -> int:
    if not args.slope > 0:
        raise InvalidInputError(f"slope: must be > 0 logMAR^-1, got {args.slope}")
    if args.trials is not None and args.trials <= 0:
        raise InvalidInputError(f"trials: must be > 0, got {args.trials}")
    if args.seed < 0:
        raise InvalidInputError(f"seed: must be >= 0, got {args.seed}")
    if args.protocol is not None:
        ignored = [flag for flag in _PAPER_SETTINGS if getattr(args, _dest(flag)) is not None]
        if ignored:
            raise InvalidInputError(
                f"{', '.join(ignored)} with --protocol {args.protocol}: the protocol sets its "
                "own policy, model and letters (and --plot draws the paper's GP map); leave "
                f"{'it' if len(ignored) == 1 else 'them'} out, or drop --protocol for the "
                "paper's experiment"
            )
        return run_protocol(args)
    for flag, default in _PAPER_SETTINGS.items():
        if getattr(args, _dest(flag)) is None:
            setattr(args, _dest(flag), default)
    args.trials = 260 if args.trials is None else args.trials
    true_rx = _parse_true_rx(args.true_rx)

    def progress(k, n, record):
        S, C = record.estimate
        lens = Prescription(record.x[0], record.x[1]).format(kind="GP setting")
        print(
            f"SIMULATED trial {k}/{n}: s {signed(record.s)} logMAR, lens {lens}, "
            f"{'correct' if record.correct else 'wrong'}; estimate {Prescription(S, C).format(kind='estimate')}",
            file=sys.stderr,
            flush=True,
        )

    result = run_refraction(
        args.policy,
        slope=args.slope,
        trials=args.trials,
        seed=args.seed,
        true_rx=true_rx,
        n_alternatives=args.n_alternatives,
        inference=args.inference,
        reference_context=args.reference_logmar,
        progress=None if args.quiet else progress,
    )
    if args.json:
        _write(args.json, json.dumps(result.to_json_dict(), indent=1) + "\n")
    if args.plot:
        write_plot(result, args.plot)
    t, f = result.true_rx, result.final_estimate
    print(
        f"SIMULATED refraction ({result.policy}, slope {result.slope:g}, {len(result.records)} trials, "
        f"seed {result.seed}"
        f"{'' if result.kernel_variant == 'refraction-se' else ', kernel ' + result.kernel_variant})"
    )
    print(f"  true correction:  {t.format(kind=TRUTH)}")
    print(f"  found correction: {f.format(kind='estimate')}")
    print(f"  errors: sphere {result.sphere_error_d:.3f} D, cylinder {result.cylinder_error_d:.3f} D")
    print(f"  acuity through the found correction: {result.final_va_logmar:.3f} logMAR (SIMULATED)")
    return 0


def run_protocol(args: argparse.Namespace) -> int:
    """One simulated session of ``args.protocol`` over an in-memory trial log (module docstring)."""
    import numpy as np

    protocol = load_protocol(args.protocol)
    true_rx = None if args.true_rx is None else parse_true_rx(args.true_rx, protocol)
    case = simulated_case(seed=args.seed, protocol=protocol, true_rx=true_rx, slope=args.slope)
    refraction = case_refraction(protocol, case)
    start = refraction.start_point

    def progress(trial, r):
        if not args.quiet:
            if getattr(trial, "slider_choice", None) is not None:
                what = (
                    f"slider {trial.slider_knob}, clearest at {trial.lens.format()} "
                    f"({trial.slider_choice + 1} of {len(trial.slider_lenses)})"
                )
            else:
                what = f"lens {trial.lens.format()}, {'correct' if trial.correct else 'wrong'}"
            print(
                f"SIMULATED trial {trial.index + 1}: s {signed(trial.s_logmar)} logMAR, {what}",
                file=sys.stderr,
                flush=True,
            )

    result = refraction.run(
        SimulatedPresenter(case.patient(protocol.n_alternatives)), progress=progress, max_steps=args.trials
    )
    if result is None:
        result = refraction.finish("clinician")
    if args.json:
        _write(args.json, json.dumps({"simulated_patient": case.to_dict(), "result": result}, indent=1) + "\n")
    found = Prescription(**result["rounded"])
    truth = case.true_rx.power_vector_array()
    kinds = [f"{result[k]} {k.split('_')[0]}" for k in ("comparisons_used", "sliders_used") if k in result]
    compared = f" ({', '.join(kinds)})" if kinds else ""
    print(
        f"SIMULATED session ({protocol.name}, {protocol.policy}, {result['trials_used']} answers{compared}, "
        f"stopped by {result['stopped_by']}, seed {args.seed})"
    )
    print(f"  true correction:  {case.true_rx.format(kind=TRUTH)}")
    distance = np.linalg.norm(found.power_vector_array() - truth)
    print(f"  found correction: {found.format()}  (dioptric distance {distance:.2f} D)")
    if start.rx is not None:
        print(
            f"  start ({start.source}): {start.rx.format()}  "
            f"({np.linalg.norm(start.rx.power_vector_array() - truth):.2f} D)"
        )
    print(
        f"  acuity through the found correction: {case.patient(protocol.n_alternatives).acuity_logmar(found):.3f} "
        "logMAR (SIMULATED)"
    )
    return 0


def _write(path, text: str) -> None:
    """``--json``: atomic, mode 0600, never over a user file or a file that is not such a document."""
    output_guard.write_output(path, text, output_guard.SIMULATION_JSON, name="--json", error=InvalidInputError)


def write_plot(result, path) -> None:
    """PNG with two panels: the true acuity through the estimate (logMAR) vs trial number, and
    the trials (letter read: filled, missed: open) over the posterior acuity map of the final
    model (:func:`visiontune.reproduction.gp_refraction_run.posterior_acuity_map`), true and found corrections marked.
    Rendered in memory, then written atomically with mode 0600 (never over a user file or a file
    that is not a PNG: :mod:`visiontune.output_guard`)."""
    output_guard.guard_output_path(path, output_guard.PNG, name="--plot", error=InvalidInputError)
    plt = pyplot()
    if plt is None:
        raise ConfigurationError("plot: matplotlib is not installed (pip install matplotlib)")
    import numpy as np

    va = [r.va_logmar for r in result.records]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    ax1.plot(np.arange(1, len(va) + 1), va)
    ax1.set_xlabel("trial")
    ax1.set_ylabel("acuity through the estimate (logMAR)")
    ax1.set_title(f"SIMULATED {result.policy}, slope {result.slope:g}")
    spheres, cylinders, vmap = posterior_acuity_map(result.final_model)
    mesh = ax2.pcolormesh(spheres, cylinders, vmap.T, shading="auto", cmap="viridis_r")
    fig.colorbar(mesh, ax=ax2, label="posterior acuity (logMAR)")
    x = np.array([r.x for r in result.records])
    ok = np.array([r.correct for r in result.records])
    ax2.scatter(x[ok, 0], x[ok, 1], s=10, c="white", edgecolors="k", linewidths=0.4, label="read")
    ax2.scatter(x[~ok, 0], x[~ok, 1], s=10, facecolors="none", edgecolors="r", linewidths=0.6, label="missed")
    ax2.plot(result.true_rx.sphere_d, result.true_rx.cylinder_d, "k*", ms=12, label="true")
    ax2.plot(*result.records[-1].estimate, "wX", ms=10, mec="k", label="found")
    ax2.set_xlabel("sphere (D)")
    ax2.set_ylabel("cylinder (D)")
    ax2.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    png = io.BytesIO()
    try:
        fig.savefig(png, format="png", dpi=100)
    finally:
        plt.close(fig)
    output_guard.write_output(path, png.getvalue(), output_guard.PNG, name="--plot", error=InvalidInputError)
