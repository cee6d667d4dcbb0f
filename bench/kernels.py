#!/usr/bin/env python3
"""The kernel-level measurements behind docs/performance.md, at the benchmark's sizes.

- torch.tanh against torch.sigmoid on the alignment model's B x S x n' tensor, and the energies
  e_ij (forward and backward) written with tanh against the plugin's BahdanauAttention._energies;
- rnnsearch's GRU encoder and fairseq lstm's (oneDNN) encoder, forward and backward, on batches
  with and without source padding;
- the softmax layer's float32 product, forward and backward, through torch's F.linear (MKL here)
  and through the plugin's Linear (oneDNN).
Median microseconds of repeated runs; run it with OMP_NUM_THREADS=1 and =2.
"""

import statistics
import sys
import time
from argparse import Namespace
from pathlib import Path

import torch

from bahdanau_plugin.cpu_fast_path.onednn_linear import linear

sys.path.insert(0, str(Path(__file__).resolve().parent))
import profile_step  # noqa: E402  (the benchmark's models and sizes)

SIZES = Namespace(embed=256, hidden=256, maxout=256, vocab=9642, batch=80, source=16, target=17)


def median_microseconds(function, repeats=30):
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times)


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
        attention._energies(attention.state_projection(state), projected).sum().backward()

    return {"energies via tanh, fwd+bwd": with_tanh, "energies as the plugin, fwd+bwd": plugin}


def encoders(models, dictionary):
    tokens = torch.randint(4, SIZES.vocab, (SIZES.batch, SIZES.source))
    padded = tokens.clone()
    for row in range(SIZES.batch):
        padded[row, : 4 * row // SIZES.batch] = dictionary.pad()  # 0 to 3 tokens of left padding, sorted as fairseq batches
    cases = {}
    for name, model in models.items():
        for label, src in (("no padding", tokens), ("padded", padded)):
            lengths = src.ne(dictionary.pad()).sum(dim=1)

            def run(model=model, src=src, lengths=lengths):
                out = model.encoder(src, lengths)
                (out["annotations"] if isinstance(out, dict) else out[0]).sum().backward()

            cases[f"{name} encoder, {label}, fwd+bwd"] = run
    return cases


def softmax_layer_product():
    """The largest product of a step, forward and backward: torch's F.linear (MKL) against the
    plugin's Linear (oneDNN)."""
    rows = SIZES.batch * SIZES.target
    x = torch.randn(rows, SIZES.maxout, requires_grad=True)
    weight = torch.randn(SIZES.vocab, SIZES.maxout, requires_grad=True)
    bias = torch.zeros(SIZES.vocab, requires_grad=True)
    upstream = torch.randn(rows, SIZES.vocab)
    cases = {}
    for label, function in (("torch F.linear", torch.nn.functional.linear), ("plugin's linear", linear)):
        cases[f"softmax layer product, {label}"] = lambda f=function: f(x, weight, bias).detach()
        cases[f"softmax layer product, {label}, fwd+bwd"] = lambda f=function: f(x, weight, bias).backward(upstream)
    return cases


def main():
    dictionary = profile_step.dictionary(SIZES.vocab)
    task = Namespace(source_dictionary=dictionary, target_dictionary=dictionary)
    models = {name: profile_step.build(name, SIZES, task) for name in ("rnnsearch", "lstm")}
    print(f"{torch.get_num_threads()} thread(s), torch {torch.__version__}")
    for cases in (activations(), energies(models["rnnsearch"]), encoders(models, dictionary),
                  softmax_layer_product()):
        for label, function in cases.items():
            print(f"{label:45s} {median_microseconds(function):10,.0f} us")


if __name__ == "__main__":
    main()
