"""Options shared by scripts/prepare_wmt14.py and scripts/prepare_multi30k.py."""

import argparse
import os
from pathlib import Path

from bahdanau_plugin.options import positive_int

from .binarize import Vocabulary
from .pipeline import Settings


def positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def pipeline_parser(description: str, from_dir_help: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True,
                        help="output folder: tok/, raw/, bpe.codes, bpe/, data-bin/, summary.json, summary.txt")
    parser.add_argument("--from-dir", type=Path, help=from_dir_help)
    vocabulary = parser.add_mutually_exclusive_group(required=True)
    vocabulary.add_argument("--shortlist", type=positive_int, metavar="N",
                            help="the paper's vocabulary: the N most frequent words of each language "
                                 "(30000 in the paper), every other word becomes <unk>")
    vocabulary.add_argument("--bpe", type=positive_int, metavar="N",
                            help="recommended: joint subword-nmt BPE with N merges, which removes unknown words")
    parser.add_argument("--max-len", type=positive_int, default=50,
                        help="keep training pairs of at most this many words per side, after tokenization "
                             "(the paper's two runs: 30 and 50; default: %(default)s); dev and test are never "
                             "length-filtered")
    parser.add_argument("--max-ratio", type=positive_float, default=9.0,
                        help="drop training and dev pairs whose longer side has more than this many times the "
                             "words of the shorter (default: %(default)s, as Moses' clean-corpus-n)")
    parser.add_argument("--workers", type=positive_int, default=os.cpu_count(),
                        help="processes for tokenization, BPE and fairseq-preprocess (default: all cores, %(default)s)")
    return parser


def settings_from(arguments: argparse.Namespace) -> Settings:
    vocabulary = Vocabulary("bpe", arguments.bpe) if arguments.bpe else Vocabulary("shortlist", arguments.shortlist)
    return Settings(vocabulary, arguments.max_len, arguments.max_ratio, arguments.workers)

