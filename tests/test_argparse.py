"""The argument types the commands share (visiontune._argparse): bounded integers and the trial log's --db."""

import argparse

import pytest

from visiontune._argparse import INT64_MAX, ArgumentParser, bounded_int, db_argument


def test_bounded_int_takes_the_bounds_and_refuses_outside_them_by_name():
    parse = bounded_int("visit id", 1, INT64_MAX)
    assert parse("1") == 1
    assert parse(str(INT64_MAX)) == 2**63 - 1
    with pytest.raises(
        argparse.ArgumentTypeError, match=r"^visit id: expected an integer in \[1, 9223372036854775807\], got 0$"
    ):
        parse("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"visit id: expected an integer in .*got 9223372036854775808"):
        parse(str(INT64_MAX + 1))
    with pytest.raises(argparse.ArgumentTypeError, match=r"^visit id: expected an integer, got '1.5'$"):
        parse("1.5")


def test_db_argument_is_optional_and_keeps_the_path():
    parser = ArgumentParser(prog="t")
    db_argument(parser)
    assert parser.parse_args([]).db is None
    assert parser.parse_args(["--db", "/tmp/log.sqlite"]).db == "/tmp/log.sqlite"
