"""Command-line arguments the benchmark suites share."""

from __future__ import annotations

import argparse


def count(text: str) -> int:
    """An ``argparse`` type for a count of things run, timed or written: a whole number of
    at least 1. With none there would be no median to report, so argparse refuses it as a
    usage error (exit 2) before anything runs."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value
