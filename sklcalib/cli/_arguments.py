"""The ``type=`` converters of the commands' options: each checks a range and
says what it expects (``must be a positive integer, got 0``)."""

import argparse


def _checked(text, convert, ok, expected):
    """``convert(text)`` when it converts and ``ok`` holds; otherwise an
    ``ArgumentTypeError`` saying what was ``expected``."""
    try:
        value = convert(text)
    except ValueError:
        value = None
    if value is None or not ok(value):
        raise argparse.ArgumentTypeError(f"must be {expected}, got {text}")
    return value


def positive_int(text):
    return _checked(text, int, lambda v: v >= 1, "a positive integer")


def non_negative_int(text):
    return _checked(text, int, lambda v: v >= 0, ">= 0")


def n_jobs(text):
    return _checked(text, int, lambda v: v >= 1 or v == -1, "a positive integer or -1")


def fraction(text):
    return _checked(text, float, lambda v: 0 < v < 1, "in (0, 1)")


def seed(text):
    return _checked(text, int, lambda v: 0 <= v < 2**32, "an integer in [0, 2**32)")
