"""The command lines' argument parser, shared by ``visiontune`` and the stand-alone entries of
the layers (``python -m visiontune.display.cli``) without their importing the top-level
:mod:`visiontune.cli`."""

from __future__ import annotations

import argparse

from visiontune.errors import one_line


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors quote the arguments as one printable line (its
    sub-command parsers are of this class too)."""

    def error(self, message: str):
        super().error(one_line(message))
