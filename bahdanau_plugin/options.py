"""Argument types for the models' options, with nothing heavy to import: the tools' command lines
use them too."""

import argparse
import math
import os
from pathlib import Path
from typing import Optional


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


def home_left_unexpanded(text: str) -> Optional[str]:
    """What is wrong with a path that starts with a '~' the shell left as it is, None where
    nothing is: bash expands '~' to a home folder at the start of a word only, so --out=~/x reaches
    the command as ~/x, which would be a folder named '~' in the current folder, made without a
    word and far from where the outputs were meant to go. A '~' folder that is there already is
    taken."""
    home = os.path.expanduser(text)
    first = Path(text).parts[0] if home != text else None
    if first is None or Path(first).exists():
        return None
    return (
        f"{text} starts with a folder named {first!r} in the current folder, not a home folder: "
        f"the shell expands '~' only at the start of a word, not after '=' nor in quotes; write "
        f"{home}"
    )


def path_argument(text: str) -> Path:
    """A path as the tools' path options take it, refused where it starts with a '~' the shell left
    as it is (home_left_unexpanded)."""
    unexpanded = home_left_unexpanded(text)
    if unexpanded is not None:
        raise argparse.ArgumentTypeError(unexpanded)
    return Path(text)
