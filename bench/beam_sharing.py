#!/usr/bin/env python3
"""Beam search with the beams of a sentence sharing its encoder outputs (``beam_rows``: one row per
sentence for the tensors of source length, reordered only when sentences finish), against
fairseq's layout, every tensor copied for every beam at every step (the plugin's
``keeps_sentences`` and ``sentence_order`` answering no), in one process, alternating.

- with --checkpoint and --data: that checkpoint on the test set (bench/benchmark.py leaves one in
  /tmp/bahdanau-bench), beam 5, batches of 50 sentences;
- without: a randomly initialised rnnsearch at the paper's sizes (vocabulary 30,000), 20 sources
  of 40 tokens, beam 5, 15 steps.
Prints the median seconds of each, and checks that both translate alike.
"""

import argparse
import contextlib
import statistics
import time
from argparse import Namespace

import torch
from fairseq import checkpoint_utils
from fairseq.sequence_generator import SequenceGenerator

from bahdanau_plugin.modules import beam_rows

from bench import profile_step  # the benchmark's model builder and dictionary

BEAM = 5


def checkpoint_batches(checkpoint, data):
    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [checkpoint], arg_overrides={"data": data}
    )
    task.load_dataset("test")
    iterator = task.get_batch_iterator(dataset=task.dataset("test"), max_sentences=50)
    generator = SequenceGenerator(
        [models[0].eval()], task.target_dictionary, beam_size=BEAM, max_len_a=1.5, max_len_b=5
    )
    return generator, list(iterator.next_epoch_itr(shuffle=False))


def paper_size_batches():
    sizes = Namespace(
        embed=620, hidden=1000, maxout=500
    )  # profile_step.build: alignment size = hidden
    dictionary = profile_step.dictionary(30000)
    torch.manual_seed(0)
    model = profile_step.build(
        "rnnsearch", sizes, Namespace(source_dictionary=dictionary, target_dictionary=dictionary)
    )
    src_tokens = torch.randint(dictionary.nspecial, len(dictionary), (20, 40))
    src_tokens[:, -1] = dictionary.eos()
    batch = {"net_input": {"src_tokens": src_tokens, "src_lengths": torch.full((20,), 40)}}
    generator = SequenceGenerator(
        [model.eval()], dictionary, beam_size=BEAM, min_len=15, max_len_a=0, max_len_b=15
    )
    return generator, [batch]


@contextlib.contextmanager
def fairseq_layout():
    """Inside: the plugin's beam rows laid out as fairseq's other models lay them out, every
    tensor copied for every beam at every step (``keeps_sentences`` and ``sentence_order``
    answering no)."""
    kept = beam_rows.keeps_sentences, beam_rows.sentence_order
    beam_rows.keeps_sentences = lambda rows, new_order: False
    beam_rows.sentence_order = lambda rows, source_rows, k: None
    try:
        yield
    finally:
        beam_rows.keeps_sentences, beam_rows.sentence_order = kept


def translate(generator, batches):
    start = time.perf_counter()
    with torch.no_grad():
        hypotheses = [generator.forward(batch) for batch in batches]
    tokens = [beams[0]["tokens"].tolist() for batch in hypotheses for beams in batch]
    return time.perf_counter() - start, tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint")
    parser.add_argument("--data")
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    generator, batches = (
        checkpoint_batches(args.checkpoint, args.data) if args.checkpoint else paper_size_batches()
    )
    ways = {"shared": contextlib.nullcontext, "copied": fairseq_layout}
    seconds, translations = {way: [] for way in ways}, {}
    for _ in range(args.repeats):
        for way, layout in ways.items():
            with layout():
                elapsed, translations[way] = translate(generator, batches)
            seconds[way].append(elapsed)
    assert translations["shared"] == translations["copied"], "sharing changed the translations"
    for way, times in seconds.items():
        print(
            f"{way}: {statistics.median(times):.3f} s (median of {args.repeats}: "
            f"{', '.join(f'{t:.3f}' for t in times)})"
        )


if __name__ == "__main__":
    main()
