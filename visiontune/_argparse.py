"""The command lines' argument parser, shared by ``visiontune`` and the stand-alone entries of
the layers (``python -m visiontune.display.cli``) without their importing the top-level
:mod:`visiontune.cli`; and the argument types the commands share (what a clinician types, or a
message saying exactly what was expected)."""

from __future__ import annotations

import argparse
import math
import re

from visiontune.errors import one_line

__all__ = [
    "INT64_MAX",
    "ArgumentParser",
    "bounded_int",
    "db_argument",
    "eye",
    "finite_float",
    "plain_name",
    "worker_count",
]

#: The largest integer SQLite stores (a signed 64-bit integer): the bound of a row id or a seed typed on a command line.
INT64_MAX = 2**63 - 1

#: An argument that starts with "-" and then a digit, a point, a comma, "inf" or "nan" is a value (a minus power
#: such as "-2.25/-1.25x35", a number refused later with its reason), never an option: none of ours looks so.
_MINUS_VALUE = re.compile(r"^-(?:[\d.,]|inf|nan)", re.IGNORECASE)
_DECIMAL_COMMA = re.compile(r"(?<=\d),(?=\d)")


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors quote the arguments as one printable line (its
    sub-command parsers are of this class too), and which reads an argument such as
    ``-2.25/-1.25x35`` as the value of the option before it (argparse takes it for an option
    and says "expected one argument")."""

    def error(self, message: str):
        super().error(one_line(message))

    def _parse_optional(self, arg_string):
        if _MINUS_VALUE.match(arg_string):
            return None
        return super()._parse_optional(arg_string)


def bounded_int(name: str, lo: int, hi: int):
    """An argparse type: an integer in ``[lo, hi]``; its messages name the argument (``name``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: expected an integer, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{name}: expected an integer in [{lo}, {hi}], got {text}")
        return value

    return parse


def db_argument(parser: argparse.ArgumentParser) -> None:
    """``--db PATH``: the SQLite trial log a command reads or writes (default: the user data directory)."""
    parser.add_argument("--db", metavar="PATH", help="SQLite trial log (default: the user data directory)")


def eye(text: str) -> str:
    """``--eye``: ``OD`` or ``OS`` in any case (``od``, `` Os ``)."""
    value = text.strip().upper()
    if value not in ("OD", "OS"):
        raise argparse.ArgumentTypeError(f"expected OD (right eye) or OS (left eye), got {text!r}")
    return value


def finite_float(text: str) -> float:
    """An argparse type: a finite number, a decimal comma read as a point (``nan``, ``inf`` refused)."""
    try:
        value = float(_DECIMAL_COMMA.sub(".", text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def worker_count(text: str) -> int:
    """An argparse type: a number of worker processes, an integer >= 1, or -1 for every core."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or (value < 1 and value != -1):
        raise argparse.ArgumentTypeError(
            f"expected a number of worker processes (1, 2, ... or -1 for every core), got {text!r}"
        )
    return value


def plain_name(text: str) -> str:
    """An argparse type: a file name without folder parts (no ``/``, ``\\``, ``..``, control
    characters), so that a file named by it stays in the folder it is written to."""
    if (
        not text.strip()
        or text in (".", "..")
        or any(c in text for c in "/\\")
        or any(ord(c) < 32 or ord(c) == 127 for c in text)
    ):
        raise argparse.ArgumentTypeError(
            f"expected a plain name (letters, digits, '-', '_', '.'; no folder parts such as '/' or '..'), got {text!r}"
        )
    return text
