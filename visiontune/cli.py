"""Command-line entry point: ``visiontune <command> ...``.

Each command lives in its own module exposing ``add_arguments(parser)`` and
``run(args) -> int``; it is imported only when used so ``visiontune --help`` stays fast.
Any :class:`VisionTuneError` becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from visiontune import __version__
from visiontune.errors import VisionTuneError

#: command name -> (module path, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="visiontune",
        description="Subjective refraction by contextual binary Bayesian optimization.",
    )
    parser.add_argument("--version", action="version", version=f"visiontune {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
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
    module_path, help_text = COMMANDS[name]
    module = importlib.import_module(module_path)
    sub = argparse.ArgumentParser(prog=f"visiontune {name}", description=help_text)
    module.add_arguments(sub)
    args = sub.parse_args(argv[1:])
    try:
        return int(module.run(args) or 0)
    except VisionTuneError as exc:
        print(f"visiontune {name}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
