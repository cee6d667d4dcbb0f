#!/usr/bin/env python3
"""The kernel-level measurements behind docs/performance.md, at the benchmark's sizes.

- torch.tanh against torch.sigmoid on the alignment model's B x S x n' tensor, and the energies
  e_ij (forward and backward) written with tanh against the alignment model's own;
- rnnsearch's GRU encoder and fairseq lstm's (oneDNN) encoder, forward and backward, on batches
  with and without source padding;
- one encoder direction, forward and backward: nn.GRU's own loop (MKL) against the fast path's
  run_gru (oneDNN products, a Python loop);
- the softmax layer's float32 product, forward and backward, through torch's F.linear (MKL here)
  and through the plugin's Linear (oneDNN), and the decoder's other products at training and
  beam-search row counts.
Median wall-clock and CPU-time microseconds of repeated runs (CPU time is the steadier of the two
on a machine shared with other work); run it with OMP_NUM_THREADS=1 and =2, and on the AVX2 class
with bench/machine.py's AVX2_SWITCHES set in the environment.
"""

import os
import statistics
import time
from argparse import Namespace

import torch

# Each fast computation, whatever this machine would choose: this script times them one by one.
os.environ.setdefault("BAHDANAU_CPU_FAST_PATH", "fast")

from bahdanau_plugin.cpu_fast_path.gru import run_gru
from bahdanau_plugin.cpu_fast_path.onednn_linear import linear

from bench import profile_step  # the benchmark's models and sizes

SIZES = Namespace(embed=256, hidden=256, maxout=256, vocab=9642, batch=80, source=16, target=17)


def median_microseconds(function, repeats=30):
    """Median wall-clock and process CPU time of one call."""
    function()
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return 1e6 * statistics.median(wall), 1e6 * statistics.median(cpu)


def activations():
    x = torch.randn(SIZES.batch, SIZES.source, SIZES.hidden)
    return {"torch.tanh": lambda: torch.tanh(x), "torch.sigmoid": lambda: torch.sigmoid(x)}


def energies(model):
    attention = model.decoder.attention
    torch.nn.init.normal_(attention.energy.weight)
    state = torch.randn(SIZES.batch, SIZES.hidden, requires_grad=True)
    projected = torch.randn(SIZES.batch, SIZES.source, SIZES.hidden, requires_grad=True)

    def with_tanh():
        hidden = torch.tanh(attention.state_projection(state).unsqueeze(1) + projected)
        attention.energy(hidden).sum().backward()

    def plugin():
        projected_state = attention.state_projection(state).unsqueeze(1)  # B x 1 beam x n'
        attention.energies(projected_state, projected).sum().backward()

    return {"energies via tanh, fwd+bwd": with_tanh, "energies as the plugin, fwd+bwd": plugin}


def encoders(models, dictionary):
    tokens = torch.randint(4, SIZES.vocab, (SIZES.batch, SIZES.source))
    padded = tokens.clone()
    for row in range(SIZES.batch):
        padded[row, : 4 * row // SIZES.batch] = (
            dictionary.pad()
        )  # 0 to 3 tokens of left padding, sorted as fairseq batches
    cases = {}
    for name, model in models.items():
        for label, src in (("no padding", tokens), ("padded", padded)):
            lengths = src.ne(dictionary.pad()).sum(dim=1)

            def run(model=model, src=src, lengths=lengths):
                out = model.encoder(src, lengths)
                (out["annotations"] if isinstance(out, dict) else out[0]).sum().backward()

            cases[f"{name} encoder, {label}, fwd+bwd"] = run
    return cases


def encoder_direction():
    rnn = torch.nn.GRU(SIZES.embed, SIZES.hidden, batch_first=True)
    inputs = torch.randn(SIZES.batch, SIZES.source, SIZES.embed, requires_grad=True)
    return {
        "one direction, nn.GRU, fwd+bwd": lambda: (
            torch.nn.GRU.forward(rnn, inputs)[0].sum().backward()
        ),
        "one direction, run_gru, fwd+bwd": lambda: run_gru(rnn, inputs)[0].sum().backward(),
    }


def product(rows, inputs, outputs, label):
    """One layer's product, forward and forward+backward: torch's F.linear (MKL) against the
    plugin's linear (oneDNN)."""
    x = torch.randn(rows, inputs, requires_grad=True)
    weight = torch.randn(outputs, inputs, requires_grad=True)
    bias = torch.zeros(outputs, requires_grad=True)
    upstream = torch.randn(rows, outputs)
    cases = {}
    for name, function in (("F.linear", torch.nn.functional.linear), ("plugin's linear", linear)):
        cases[f"{label} {rows}x{inputs}->{outputs}, {name}"] = lambda f=function: f(
            x, weight, bias
        ).detach()
        cases[f"{label} {rows}x{inputs}->{outputs}, {name}, fwd+bwd"] = lambda f=function: f(
            x, weight, bias
        ).backward(upstream)
    return cases


def products():
    """The softmax layer (the largest product of a step), the deep output, and a recurrent
    product, at the training batch's rows and at beam search's (50 sentences x beam 5)."""
    training_rows, beam_rows, hidden = SIZES.batch * SIZES.target, 250, SIZES.hidden
    return {
        **product(training_rows, SIZES.maxout, SIZES.vocab, "softmax layer"),
        **product(beam_rows, SIZES.maxout, SIZES.vocab, "softmax layer"),
        **product(training_rows, SIZES.embed + 3 * hidden, 2 * SIZES.maxout, "deep output"),
        **product(SIZES.batch, hidden, 3 * hidden, "recurrent"),
        **product(beam_rows, hidden, 3 * hidden, "recurrent"),
    }


def main():
    dictionary = profile_step.dictionary(SIZES.vocab)
    task = Namespace(source_dictionary=dictionary, target_dictionary=dictionary)
    models = {name: profile_step.build(name, SIZES, task) for name in ("rnnsearch", "lstm")}
    print(
        f"{torch.get_num_threads()} thread(s), torch {torch.__version__}, "
        f"ATen {torch.backends.cpu.get_cpu_capability()}"
    )
    for cases in (
        activations(),
        energies(models["rnnsearch"]),
        encoders(models, dictionary),
        encoder_direction(),
        products(),
    ):
        for label, function in cases.items():
            wall, cpu = median_microseconds(function)
            print(f"{label:60s} {wall:10,.0f} us wall {cpu:10,.0f} us CPU")


if __name__ == "__main__":
    main()
