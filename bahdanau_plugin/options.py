"""Argument types for the models' options, with nothing heavy to import: the tools' command lines
use them too."""

import argparse


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value
