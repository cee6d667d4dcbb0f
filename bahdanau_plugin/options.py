"""Argument types for the models' options, with nothing heavy to import: the tools' command lines
use them too."""

import argparse
import math
import os
from pathlib import Path


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


def path_argument(text: str) -> Path:
    """A path as the tools' path options take it, refused where it starts with a '~' the shell left
    as it is: bash expands '~' to a home folder at the start of a word only, so --out=~/x reaches
    the tool as ~/x, which would be a folder named '~' in the current folder, made without a word
    and far from where the outputs were meant to go. A '~' folder that is there already is taken."""
    path = Path(text)
    home = os.path.expanduser(text)
    if home != text and not Path(path.parts[0]).exists():
        raise argparse.ArgumentTypeError(
            f"{text} starts with a folder named {path.parts[0]!r} in the current folder, not a "
            "home folder: the shell expands '~' only at the start of a word, not after '=' nor in "
            f"quotes; write {home}"
        )
    return path
