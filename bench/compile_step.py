#!/usr/bin/env python3
"""torch.compile of the decoder step against the fast path's hand-fused recurrence.

The step compiled is the paper's (Eqs. 4 to 6, as the modules compute it, in plain torch
operators), with torch.compile's defaults (inductor, static shapes). At the benchmark's sizes,
on a batch of 80 sentences with 16 source and 17 target tokens:

- training: the decoder's forward and backward passes, looping the compiled step over the
  positions, against the fast path's ``decoder_recurrence`` and the same step uncompiled; and the
  time of the first forward and backward (compiling);
- decoding: one step without gradients on 250 rows (50 sentences at beam 5), the same three; the
  time of the first call (compiling), and of the first call with 245 rows (a beam search's row
  count shrinks as sentences finish: torch.compile compiles again, for any count).

Medians of CPU time (steadier than wall time on a shared machine). Run it with a fresh
``TORCHINDUCTOR_CACHE_DIR`` to time compiling from nothing, as a first run on a machine does.
"""

import statistics
import time
from argparse import Namespace

import torch

from bahdanau_plugin.cpu_fast_path.decoder import FastRNNsearchDecoder
from bahdanau_plugin.cpu_fast_path.decoder_recurrence import (
    SIGMOID_IDENTITY,
    Attention,
    Step,
    layout,
    run,
)

from bench import profile_step  # the benchmark's models and sizes

SIZES = Namespace(embed=256, hidden=256, maxout=256, vocab=9642, batch=80, source=16, target=17)


def paper_step(state, drive, annotations, projected, padding, W_a, v_a, C, U_zr, U):
    """s_{i-1} -> (s_i, c_i, alpha_i): Eqs. (4) to (6), as the modules compute them."""
    hidden = SIZES.hidden
    energies = torch.tanh(projected + (state @ W_a.t()).unsqueeze(1)) @ v_a
    alpha = torch.softmax(energies.masked_fill(padding, float("-inf")), dim=1)
    context = torch.bmm(alpha.unsqueeze(1), annotations).squeeze(1)
    drive = drive + context @ C.t()
    update, reset = torch.sigmoid(drive[:, : 2 * hidden] + state @ U_zr.t()).chunk(2, 1)
    candidate = torch.tanh(drive[:, 2 * hidden :] + (reset * state) @ U.t())
    return torch.lerp(state, candidate, update), context, alpha


def looping(step):
    """A decoder ``recur`` that calls ``step`` at every position."""

    def recur(decoder, input_drives, encoder_out, cache, keep_last_state):
        state, weights = cache["state"], _weights(decoder)
        inputs = (cache["annotations"], cache["projected_annotations"], encoder_out["padding_mask"])
        prev_states, contexts, alphas = [], [], []
        drives = input_drives.unbind(1)
        for i, drive in enumerate(drives):
            prev_states.append(state)
            next_state, context, alpha = step(state, drive, *inputs, *weights)
            contexts.append(context)
            alphas.append(alpha)
            if keep_last_state or i + 1 < len(drives):
                state = next_state
        stacked = [torch.stack(tensors, 1) for tensors in (prev_states, contexts, alphas)]
        return (*stacked, state)

    return recur


def _weights(decoder):
    attention, gru = decoder.attention, decoder.gru
    return (
        attention.state_projection.weight,
        attention.energy.weight.view(-1),
        gru.context_weights.weight,
        gru.gate_weights.weight,
        gru.candidate_weights.weight,
    )


def cpu_ms(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return 1000 * statistics.median(times)


def seconds(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def training(model, compiled_step):
    src, lengths, prev, _ = profile_step.batch(model.task, SIZES, torch.Generator().manual_seed(0))
    encoder_out = {
        key: value.detach() if torch.is_tensor(value) else value
        for key, value in model.encoder(src, lengths).items()
    }
    recurrences = {
        "hand-fused (the fast path)": FastRNNsearchDecoder.recur,
        "torch.compile": looping(compiled_step),
        "uncompiled": looping(paper_step),
    }

    def forward_and_backward(recur):
        def run_once():
            model.decoder.recur = recur.__get__(model.decoder)
            features, _ = model.decoder.extract_features(prev, encoder_out)
            features.sum().backward()

        return run_once

    print(
        "training, first forward and backward with torch.compile (compiling): "
        f"{seconds(forward_and_backward(recurrences['torch.compile'])):.1f} s"
    )
    for name, recur in recurrences.items():
        forward_and_backward(recur)()
        milliseconds = cpu_ms(forward_and_backward(recur), 10)
        print(f"training, decoder forward and backward, {name}: {milliseconds:.1f} ms CPU")


def decoding(model):
    generator = torch.Generator().manual_seed(0)
    rows, hidden = 250, SIZES.hidden

    def tensor(*shape):
        return torch.rand(*shape, generator=generator)

    state, drive = tensor(rows, hidden), tensor(rows, 3 * hidden)
    annotations, projected = (
        tensor(rows, SIZES.source, 2 * hidden),
        tensor(rows, SIZES.source, hidden),
    )
    padding = torch.zeros(rows, SIZES.source, dtype=torch.bool)
    weights = _weights(model.decoder)
    inputs = (state, drive, annotations, projected, padding, *weights)
    torch._dynamo.reset()  # as in a process that only decodes
    compiled_step = torch.compile(paper_step)
    fused_layout = layout(model.decoder.weights(), SIGMOID_IDENTITY)
    attention = Attention(annotations, 2 * projected, None, SIGMOID_IDENTITY)
    steps = {
        "hand-fused (the fast path)": lambda: run(
            Step(fused_layout, rows, training=False), drive.unsqueeze(1), state, attention, 1
        ),
        "torch.compile": lambda: compiled_step(*inputs),
        "uncompiled": lambda: paper_step(*inputs),
    }
    with torch.no_grad():
        print(
            "decoding, first step with torch.compile (compiling): "
            f"{seconds(steps['torch.compile']):.1f} s"
        )
        for name, step in steps.items():
            step()
            print(f"decoding, one step of {rows} rows, {name}: {cpu_ms(step, 100):.2f} ms CPU")
        fewer = [
            tensor[:245] if tensor.dim() > 1 and tensor.size(0) == rows else tensor
            for tensor in inputs
        ]
        print(
            "decoding, first step of 245 rows with torch.compile (compiling again, now for any "
            "row count): "
            f"{seconds(lambda: compiled_step(*fewer)):.1f} s"
        )


def main():
    dictionary = profile_step.dictionary(SIZES.vocab)
    task = Namespace(source_dictionary=dictionary, target_dictionary=dictionary)
    model = profile_step.build("rnnsearch", SIZES, task)
    model.task = task
    print(f"{torch.get_num_threads()} thread(s), torch {torch.__version__}")
    training(model, torch.compile(paper_step))
    decoding(model)


if __name__ == "__main__":
    main()
