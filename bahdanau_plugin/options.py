"""Argument types for the models' options, with nothing heavy to import: the tools' command lines
use them too."""

import argparse
import math


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def probability(text: str) -> float:
    """A dropout probability: from 0 to under 1 (torch refuses more than 1 at the first update,
    takes a negative one as 0, and at 1 zeroes every embedding)."""
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a probability from 0 to under 1")
    return value


def finite_float(text: str) -> float:
    """A number as fairseq's float options take it, but finite: fairseq takes nan and inf without
    a word, and a length penalty of either ranks the hypotheses by nan or 0 (a power of the length
    that is nan or infinite), a search's result without meaning."""
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number")
    return value
