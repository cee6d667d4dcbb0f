#!/usr/bin/env python3
"""Where a training step's time goes: torch.profiler over rnnsearch's and fairseq lstm's forward and
backward passes on one Multi30k-sized batch (synthetic tokens; sizes as in bench/benchmark.py).

With --decoding, the same for a beam search instead: fairseq's SequenceGenerator over --batch
sources, every hypothesis forced to --length tokens as in bench/benchmark.py's decoding, each model
prepared for generation as fairseq-generate prepares it; the matrix products' share is printed
beside the table.

With --json, no table: for each model, the self CPU milliseconds of matrix products and of
everything else per training step and per beam-search step (one target position), as JSON
(bench/benchmark.py reports them).

It profiles with the allocator settings fairseq-train runs these models with (freed memory kept
for reuse: bahdanau_plugin/freed_memory.py), as bench/benchmark.py trains lstm too. With glibc's
defaults every step maps its large blocks afresh, and their pages are faulted in by whichever
operator writes them first: rnnsearch's output layer's bias copied into its logits (12 ms a step
at the benchmark's sizes, "everything else"), lstm's product (a "product"). The split would then
move a step's time between its columns by how each model happens to fill its logits. A search's
blocks (under glibc's 32 MiB at these row counts) are reused either way, as in fairseq-generate."""

import argparse
import json
import statistics
import time
from argparse import Namespace

import torch
from fairseq.sequence_generator import SequenceGenerator

from bahdanau_plugin.freed_memory import keep_freed_memory_for_reuse
from bench.common import build, dictionary


def batch(task, sizes, generator):
    src = torch.randint(
        4, len(task.source_dictionary), (sizes.batch, sizes.source), generator=generator
    )
    tgt = torch.randint(
        4, len(task.target_dictionary), (sizes.batch, sizes.target), generator=generator
    )
    prev = torch.cat([torch.full((sizes.batch, 1), 2), tgt[:, :-1]], dim=1)
    return src, torch.full((sizes.batch,), sizes.source), prev, tgt


def step(model, src, lengths, prev, tgt):
    logits, _ = model(src, lengths, prev)
    loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), tgt.view(-1))
    loss.backward()


# The matrix products of both models: the plugin's oneDNN linear, ATen's (F.linear, nn.LSTMCell,
# the fused recurrence's addmm), the batched products of attention, and lstm's fused oneDNN LSTM
# layer (its products and its gates in one kernel, mostly products).
PRODUCTS = {
    "mkldnn::_linear_pointwise",
    "aten::addmm",
    "aten::mm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::baddbmm_",
    "aten::mv",
    "aten::addmv_",
    "aten::addmv",
    "aten::mkldnn_rnn_layer",
    "aten::mkldnn_rnn_layer_backward",
}


def searcher(model, task, sizes):
    """A function running one beam search over a synthetic batch, and the tokens it generates."""
    model.make_generation_fast_()
    model.eval()
    src, lengths, _, _ = batch(task, sizes, torch.Generator().manual_seed(0))
    generator = SequenceGenerator(
        [model],
        task.target_dictionary,
        beam_size=sizes.beam,
        min_len=sizes.length,
        max_len_a=0,
        max_len_b=sizes.length,
    )
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths}}

    def search():
        with torch.no_grad():
            generator.forward(sample)

    return search, sizes.batch * (
        sizes.length + 1
    )  # the best hypotheses' tokens, as fairseq-generate counts


def products_ms(profiler, runs):
    """(matrix products, everything else): self CPU milliseconds per run."""
    events = profiler.key_averages()
    products = sum(event.self_cpu_time_total for event in events if event.key in PRODUCTS)
    total = sum(event.self_cpu_time_total for event in events)
    return products / 1000 / runs, (total - products) / 1000 / runs


def profiled(model, task, sizes, decoding):
    """(ms per run, products ms, everything else ms, profiler, what, tokens per run)."""
    if decoding:
        run, tokens = searcher(model, task, sizes)
        what = f"beam search (beam {sizes.beam}, {sizes.batch} sentences x {sizes.length} tokens)"
    else:
        data = batch(task, sizes, torch.Generator().manual_seed(0))
        run, tokens, what = (lambda: step(model, *data)), sizes.batch * sizes.target, "step"
    for _ in range(3):
        run()
    start = time.perf_counter()
    with torch.profiler.profile() as profiler:
        for _ in range(sizes.steps):
            run()
    elapsed = (time.perf_counter() - start) / sizes.steps
    return (elapsed * 1000, *products_ms(profiler, sizes.steps), profiler, what, tokens)


def outside_products(sizes, task):
    """Per model: self CPU ms of products and of everything else per training step and per
    beam-search step (one target position of every hypothesis), the median of --steps runs
    profiled one by one (other work on the machine inflates some runs)."""
    split = {}
    for name in sizes.models:
        split[name] = {}
        for phase, decoding, steps_per_run in (
            ("training step", False, 1),
            ("beam-search step", True, sizes.length + 1),
        ):
            phase_sizes = Namespace(**{**vars(sizes), "batch": sizes.decode_batch, "steps": 1})
            if not decoding:
                phase_sizes = Namespace(**{**vars(sizes), "steps": 1})
            model = build(name, phase_sizes, task)
            runs = [profiled(model, task, phase_sizes, decoding)[1:3] for _ in range(sizes.steps)]
            split[name][phase] = {
                key: statistics.median(run[index] for run in runs) / steps_per_run
                for index, key in enumerate(("products_ms", "rest_ms"))
            }
    return split


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embed", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--maxout", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=9642)
    parser.add_argument("--batch", type=int, default=80)
    parser.add_argument("--source", type=int, default=16)
    parser.add_argument("--target", type=int, default=17)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rows", type=int, default=18)
    parser.add_argument("--models", nargs="+", default=["rnnsearch", "lstm"])
    parser.add_argument(
        "--decoding", action="store_true", help="profile a beam search instead of a training step"
    )
    parser.add_argument("--beam", type=int, default=5, help="with --decoding")
    parser.add_argument(
        "--length", type=int, default=16, help="with --decoding: tokens of every hypothesis"
    )
    parser.add_argument(
        "--json", action="store_true", help="print only the split of both phases, as JSON"
    )
    parser.add_argument("--decode-batch", type=int, default=50, help="with --json: sources")
    sizes = parser.parse_args()
    keep_freed_memory_for_reuse()  # as fairseq-train does: the module's docstring says why
    task = Namespace(
        source_dictionary=dictionary(sizes.vocab), target_dictionary=dictionary(sizes.vocab)
    )
    if sizes.json:
        print(json.dumps(outside_products(sizes, task)))
        return
    for name in sizes.models:
        model = build(name, sizes, task)
        elapsed, products, rest, profiler, what, tokens = profiled(
            model, task, sizes, sizes.decoding
        )
        unit = "generated tokens/s" if sizes.decoding else "target tokens/s"
        print(
            f"== {name}: {elapsed:.1f} ms per {what} (profiled), {tokens / elapsed * 1000:.0f} "
            f"{unit}; self CPU time per run: matrix products {products:.1f} ms, everything else "
            f"{rest:.1f} ms"
        )
        print(profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=sizes.rows))


if __name__ == "__main__":
    main()
