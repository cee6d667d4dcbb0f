#!/usr/bin/env python3
"""Operators per target position: how many operators (dispatches on a CPU; on a GPU each launches
one or more kernels) a model runs for each target word, in training and in beam search.

Counted with torch.profiler as the difference between two target lengths, so that what a sentence
costs once (the encoder, U_a h_j, a search's first steps) cancels out and only the decoder's
per-position work remains, after a first run at each length that does what a process does once
(compiling the step):

- ``training forward`` and ``training backward``: a teacher-forced forward pass over targets of
  each length, and its backward pass from the log-probabilities;
- ``beam step``: one step of fairseq's beam search as its SequenceGenerator runs the model
  (``EnsembleModel``: the decoder's state and the encoder output reordered among the beams, the
  decoder's incremental step, the log-probabilities), without the search's own bookkeeping; its
  step compiled from the first, as on a GPU (on a CPU a search compiles once it has run a while).

An operator is an ATen (or oneDNN extension) operator called from outside any other operator:
what the model dispatches, not what those operators call inside; the kernels that inductor
generates for a compiled step are not operators (on a CPU they are C++ loops called directly).
On a GPU each phase also reports ``kernels``, the device kernels launched per target position.

    python -m bench.operator_counts   # rnnsearch, rnnencdec and lstm at the benchmark's sizes
"""

import argparse
import os
from argparse import Namespace
from typing import Dict, Optional

import torch
from fairseq.sequence_generator import EnsembleModel
from torch.profiler import ProfilerActivity, profile

from bench.common import build, dictionary  # the benchmark's models (main)

OPERATOR_PREFIXES = ("aten::", "mkldnn::")
PHASES = ("training forward", "training backward", "beam step")


def operators_per_target_position(
    model: torch.nn.Module,
    device: str = "cpu",
    *,
    sentences: int = 4,
    source_length: int = 7,
    target_lengths=(4, 8),
    beam: int = 5,
) -> Dict[str, Dict[str, Optional[float]]]:
    """For each phase (``PHASES``): ``operators`` per target position, and on CUDA ``kernels``
    (None elsewhere). The model is moved to ``device``; its parameters are not changed. Sources
    are unpadded: fairseq batches sentences of one source length."""
    model = model.to(device)
    short, long = target_lengths
    counts = {}
    for phase, count in (
        ("training", _training_counts),
        ("beam step", _beam_step_counts),
    ):
        for length in target_lengths:  # once-per-process work, at both lengths' shapes
            count(model, device, sentences, source_length, length, beam)
        at_short = count(model, device, sentences, source_length, short, beam)
        at_long = count(model, device, sentences, source_length, long, beam)
        for name in at_short:
            counts[name] = {
                key: None
                if at_short[name][key] is None
                else (at_long[name][key] - at_short[name][key]) / (long - short)
                for key in ("operators", "kernels")
            }
    return {phase: counts[phase] for phase in PHASES}


def _tokens(model, device, sentences, length, side):
    dictionary = model.encoder.dictionary if side == "source" else model.decoder.dictionary
    generator = torch.Generator().manual_seed(length)
    words = torch.randint(
        dictionary.nspecial, len(dictionary), (sentences, length), generator=generator
    )
    return words.to(device)


def _training_counts(model, device, sentences, source_length, target_length, beam):
    model.train()
    src = _tokens(model, device, sentences, source_length, "source")
    prev = _tokens(model, device, sentences, target_length, "target")
    lengths = torch.full((sentences,), source_length, device=device)
    encoder_out = model.encoder(src, lengths)
    with _counting(device) as forward:
        log_probs = model.get_normalized_probs(model.decoder(prev, encoder_out), log_probs=True)
    loss = log_probs.sum()
    with _counting(device) as backward:
        loss.backward()
    model.zero_grad(set_to_none=True)
    return {"training forward": forward.counts, "training backward": backward.counts}


def _beam_step_counts(model, device, sentences, source_length, target_length, beam):
    """The model's work in ``target_length`` steps of a beam search: the beams of each sentence
    swap places at every step, as a search's reorders do while no sentence has finished."""
    model.eval()
    ensemble = EnsembleModel([model])
    src = _tokens(model, device, sentences, source_length, "source")
    lengths = torch.full((sentences,), source_length, device=device)
    rows = torch.arange(sentences * beam, device=device)
    sentence_start = rows - rows % beam
    swapped = sentence_start + (beam - 1 - rows % beam)  # each sentence's beams in reverse order
    tokens = _tokens(model, device, sentences * beam, target_length, "target")
    prefixes = [tokens[:, : step + 1] for step in range(target_length)]
    with torch.no_grad():
        encoder_outs = ensemble.forward_encoder({"src_tokens": src, "src_lengths": lengths})
        encoder_outs = ensemble.reorder_encoder_out(encoder_outs, rows // beam)
        incremental_states = [{}]
        with _counting(device) as steps:
            for step, prefix in enumerate(prefixes):
                if step > 0:
                    ensemble.reorder_incremental_state(incremental_states, swapped)
                    encoder_outs = ensemble.reorder_encoder_out(encoder_outs, swapped)
                ensemble.forward_decoder(prefix, encoder_outs, incremental_states)
    return {"beam step": steps.counts}


class _counting:
    """Counts the operators (and on CUDA the kernels) run inside its block."""

    def __init__(self, device: str):
        self.cuda = torch.device(device).type == "cuda"
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        self.profiler = profile(activities=activities)
        self.counts = None

    def __enter__(self):
        self.profiler.__enter__()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            torch.cuda.synchronize()
        self.profiler.__exit__(*exc)
        events = self.profiler.events()
        operators = sum(1 for event in events if _is_outermost_operator(event))
        kernels = len(device_kernels(events)) if self.cuda else None
        self.counts = {"operators": operators, "kernels": kernels}
        return False


class NoKernelsRecorded(RuntimeError):
    """The profiler saw operators run on the GPU but recorded none of their kernels."""


def device_kernels(events) -> list:
    """The GPU kernels among the profiler's events. None at all, where operators ran, is the
    profiler's failure, not a count: CUDA's profiling interface (CUPTI) is missing or refused,
    as it is under some sandboxes."""
    kernels = [event for event in events if event.device_type == torch.autograd.DeviceType.CUDA]
    if not kernels and any(_is_operator(event) for event in events):
        raise NoKernelsRecorded(
            "the profiler recorded no GPU kernel although operators ran: CUDA's profiling "
            "interface (CUPTI) is not available here, so kernels cannot be counted"
        )
    return kernels


def _is_operator(event) -> bool:
    return event.name.startswith(OPERATOR_PREFIXES)


def _is_outermost_operator(event) -> bool:
    if not _is_operator(event):
        return False
    parent = event.cpu_parent
    while parent is not None:
        if _is_operator(parent):
            return False
        parent = parent.cpu_parent
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["rnnsearch", "rnnencdec", "lstm"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--embed", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--maxout", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=9642)
    sizes = parser.parse_args()
    os.environ.setdefault("BAHDANAU_CPU_SEARCH_COMPILE_AFTER", "0")  # the compiled search counted
    symbols = dictionary(sizes.vocab)
    task = Namespace(source_dictionary=symbols, target_dictionary=symbols)
    for name in sizes.models:
        counts = operators_per_target_position(build(name, sizes, task), sizes.device)
        for phase, measured in counts.items():
            kernels = "" if measured["kernels"] is None else f", {measured['kernels']:.1f} kernels"
            operators = f"{measured['operators']:.1f} operators{kernels}"
            print(f"{name} {phase}: {operators} per target position")


if __name__ == "__main__":
    main()
