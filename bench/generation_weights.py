#!/usr/bin/env python3
"""Beam search with the weights packed once for generation (fairseq's make_generation_fast_, the
fast path's ``keep_packed_for_generation``), against oneDNN reordering each plain weight at every
product, in one process, alternating.

The model: the checkpoint that bench/serve.py trains (or --checkpoint, --data, --bpe-codes), loaded
through fairseq's hub interface (which prepares it for generation); the input: the first
--sentences sentences of test_2016_flickr, Moses-tokenized and BPE-encoded once beforehand. For
each batch size, ``hub.generate`` at beam 5 over all of them; prints the median sentences/s of
each side and checks that both translate alike. Run it with the AVX2 switches of bench/machine.py
before it for the AVX2 class.
"""

import argparse
import gzip
import os
import statistics
import sys
import time
from pathlib import Path

# Packed and plain weights both, whatever this machine would choose: this script times the two.
os.environ.setdefault("BAHDANAU_CPU_FAST_PATH", "fast")

from bahdanau_plugin.cpu_fast_path import onednn_linear
from bahdanau_tools.hub import load_translator

from bench import machine  # the machine line

SERVE_WORK = Path("/tmp/bahdanau-bench")
MULTI30K = Path(__file__).resolve().parents[2] / "shared" / "data" / "multi30k"
BEAM = 5


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--checkpoint", type=Path, default=SERVE_WORK / "checkpoints-serve" / "checkpoint_last.pt"
    )
    parser.add_argument("--data", type=Path, default=SERVE_WORK / "multi30k-bpe" / "data-bin")
    parser.add_argument("--bpe-codes", type=Path, default=SERVE_WORK / "multi30k-bpe" / "bpe.codes")
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--repeats", type=int, default=3)
    return parser.parse_args()


def encoded_test_sentences(hub, count):
    with gzip.open(MULTI30K / "test_2016_flickr.en.gz", "rt", encoding="utf-8") as lines:
        return [
            hub.binarize(hub.apply_bpe(hub.tokenize(line.strip()))) for line in list(lines)[:count]
        ]


def translate(hub, sources, batch_size):
    """(sentences/s, best hypotheses' tokens)."""
    start = time.perf_counter()
    tokens = []
    for first in range(0, len(sources), batch_size):
        tokens += [
            beams[0]["tokens"].tolist()
            for beams in hub.generate(sources[first : first + batch_size], beam=BEAM)
        ]
    return len(sources) / (time.perf_counter() - start), tokens


def main():
    args = arguments()
    for path in (args.checkpoint, args.data, args.bpe_codes):
        if not path.exists():
            sys.exit(
                f"error: {path} does not exist: run bench/serve.py first, or give --checkpoint, "
                "--data, --bpe-codes"
            )
    hub = load_translator(
        args.checkpoint,
        args.data,
        source_lang="en",
        target_lang="fr",
        tokenizer="moses",
        bpe="subword_nmt",
        bpe_codes=str(args.bpe_codes),
    )
    sources = encoded_test_sentences(hub, args.sentences)
    reorder = onednn_linear._ONEDNN_REORDER_WEIGHT
    translate(hub, sources, max(args.batch_sizes))  # warm-up: oneDNN's kernels, the allocator
    speeds, translations = {}, {}
    for _ in range(args.repeats):
        for packed in (False, True):
            onednn_linear._ONEDNN_REORDER_WEIGHT = (
                reorder if packed else None
            )  # None: the plain weights
            for batch_size in args.batch_sizes:
                speed, tokens = translate(hub, sources, batch_size)
                speeds.setdefault((batch_size, packed), []).append(speed)
                translations.setdefault((batch_size, packed), tokens)
    onednn_linear._ONEDNN_REORDER_WEIGHT = reorder
    print(
        "| batch | plain weights, sentences/s | packed once, sentences/s | packed / plain | same "
        "translations |"
    )
    print("|---|---|---|---|---|")
    for batch_size in args.batch_sizes:
        plain, packed = (statistics.median(speeds[batch_size, side]) for side in (False, True))
        same = translations[batch_size, False] == translations[batch_size, True]
        print(
            f"| {batch_size} | {plain:.1f} | {packed:.1f} | {packed / plain:.2f} | "
            f"{'yes' if same else 'NO'} |"
        )
    print(f"\n- Machine: {machine.machine_line(machine.describe())}.")
    print(
        f"- {args.sentences} sentences of test_2016_flickr, beam {BEAM}, median of {args.repeats} "
        "alternating repeats."
    )
    print(f"- Command: `{' '.join(['python -m bench.generation_weights', *sys.argv[1:]])}`")


if __name__ == "__main__":
    main()
