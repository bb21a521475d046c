"""Command-line entry point: ``visiontune <command> ...``.

Each command lives in its own module exposing ``add_arguments(parser)`` and
``run(args) -> int``; it is imported only when used so ``visiontune --help`` stays fast.
Any :class:`VisionTuneError` becomes one line on stderr and exit code 2; that line, and
argparse's usage errors, show what the user typed with control characters and line breaks
escaped (:func:`visiontune.errors.one_line`).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from visiontune import __version__
from visiontune._argparse import ArgumentParser
from visiontune.errors import VisionTuneError, one_line

#: command name -> (module path, one-line help[, add-arguments function, run function])
COMMANDS: dict[str, tuple[str, ...]] = {
    "app": ("visiontune.app.cli", "the clinician's desktop app (a simulated patient with --simulate)"),
    "policies": (
        "visiontune.reproduction.acquisition.cli",
        "list every acquisition policy with its scenario and source",
    ),
    "session": (
        "visiontune.session.cli",
        "run or resume a refraction session headless (simulated patient)",
        "add_session_arguments",
        "run_session",
    ),
    "bench": (
        "visiontune.reproduction.bench_cli",
        "run a paper experiment (resumable sweep) and its stratified analysis",
    ),
    "validate": (
        "visiontune.validation.validate_cli",
        "clinical validation: simulated patient populations through the session loop",
    ),
    "simulate": (
        "visiontune.reproduction.simulate_cli",
        "run one simulated refraction (no store) and print the errors",
    ),
    "report": ("visiontune.report.cli", "export a finished session: PDF, CSV, JSON, FHIR VisionPrescription"),
    "calibrate": ("visiontune.display.cli", "record the patient screen's size, distance, mirror and luminance"),
    "sessions": (
        "visiontune.session.cli",
        "list the trial log's sessions, show one, discard one without answers, time answers",
        "add_sessions_arguments",
        "run_sessions",
    ),
    "visit": (
        "visiontune.report.visit_cli",
        "a visit (both eyes, balance): run headless, show, sign off, export PDF / FHIR / DICOM / CSV / JSON",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="visiontune",
        description="Subjective refraction by contextual binary Bayesian optimization.",
    )
    parser.add_argument("--version", action="version", version=f"visiontune {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text, *_) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv or argv[0].startswith("-") or argv[0] not in COMMANDS:
        args = parser.parse_args(argv)  # prints help/version or a usage error
        parser.print_help()
        return 0
    name = argv[0]
    module_path, help_text, *functions = COMMANDS[name]
    add_name, run_name = functions or ("add_arguments", "run")
    module = importlib.import_module(module_path)
    sub = ArgumentParser(prog=f"visiontune {name}", description=help_text)
    getattr(module, add_name)(sub)
    args = sub.parse_args(argv[1:])
    try:
        return int(getattr(module, run_name)(args) or 0)
    except VisionTuneError as exc:
        print(f"visiontune {name}: error: {one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
