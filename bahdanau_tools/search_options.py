"""The search options that bahdanau-evaluate, bahdanau-plot-alignment and bahdanau-serve take as
fairseq-generate does, so that each searches a sentence as the others do when given the same ones:
how wide the beam is (the paper's 12 by default), how long a translation may be, and which of the
finished translations is kept (docs/decoding.md)."""

import argparse

from bahdanau_plugin.options import finite_float, positive_int

BEAM = 12  # the paper's
MAX_LEN_B, LENPEN = 200, 1.0  # fairseq's


def add_beam(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--beam", type=positive_int, default=BEAM, help="beam size (default: %(default)s)"
    )


def add_length_and_ranking(parser: argparse.ArgumentParser) -> None:
    """--max-len-b and --lenpen, with fairseq's defaults."""
    parser.add_argument(
        "--max-len-b",
        type=positive_int,
        default=MAX_LEN_B,
        help="translations have at most this many tokens (fairseq's option; default: %(default)s)",
    )
    parser.add_argument(
        "--lenpen",
        type=finite_float,
        default=LENPEN,
        help="length penalty, fairseq's: a translation is ranked by its summed log-probability "
        "divided by its length to this power; 0 ranks by the sum (as the paper's code, GroundHog, "
        "does by default), 1 by the log-probability per token (default: %(default)s, fairseq's)",
    )


def search(args: argparse.Namespace) -> dict:
    """What the options above give fairseq's search (the hub's generate, translate)."""
    return {"max_len_b": args.max_len_b, "lenpen": args.lenpen}


FAIRSEQS = {"max_len_b": MAX_LEN_B, "lenpen": LENPEN}  # search() where none is given
