"""Section: the decoder's recurrence on the GPU, each way of computing it, timed alone.

RNNsearch's decoder at the paper's sizes (n = n' = 1000, embeddings 620), 80 sentences of 50
source and 50 target tokens, forward and backward passes of ``ConditionalGRUDecoder.recur`` with a
random weighting of its outputs, in float32 with TF32 off and on and in bfloat16 (the model
converted, the alignment model float32: docs/precision.md):

- ``modules``: the modules' own code, ``recur`` (what runs with the fast path set to plain);
- ``modules, graphed``: the same code recorded as CUDA graphs by torch's
  ``make_graphed_callables`` (graphs alone, without restructuring the step);
- ``written out``: the fused recurrence run eagerly (speed/recurrence.py: the products that read
  s_{i-1} as one, additions folded into products, the backward pass written out with each weight's
  gradient one product after the loop);
- ``written out, graphed``: the same replayed from CUDA graphs (speed/cuda/graphs.py): what the
  fused recurrence runs on a GPU.

Each is timed with CUDA events over ``REPEATS`` steps after ``WARMUP`` (the graphs are recorded
then), median step; and its peak memory above the model's. Also the same for one whole training
step of the model (encoder, decoder, output layer, loss) with the fast path plain and on. Run as
``python -m bench.gpu.recurrence [--device cuda] [--dry-run]``, it prints JSON.
"""

import argparse
import statistics
import time

import torch

from bahdanau_plugin.speed.cpu.measured_choice import CHOOSER
from bahdanau_plugin.speed.recurrence import Recurrence
from bench import models

from .kit import Kit, print_result, result_of

PAPER = dict(words=30000, sentences=80, source=50, target=50)
DRY_RUN = dict(words=50, sentences=4, source=6, target=5)
WARMUP, REPEATS = 3, 10
PRECISIONS = ("float32, TF32 off", "float32, TF32 on", "bfloat16")
VARIANTS = ("modules", "modules, graphed", "written out", "written out, graphed")


def _model(sizes, device: str, precision: str):
    dimensions = dict.fromkeys(models.PAPER_SIZES, 8) if device == "cpu" else models.PAPER_SIZES
    model = models.build("rnnsearch", sizes["words"], **dimensions).to(device)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # away from the paper's start, where attention is uniform
        for parameter in model.parameters():
            parameter.copy_(0.01 * torch.randn(parameter.shape, generator=generator))
    return model.to(torch.bfloat16) if precision == "bfloat16" else model


def _batch(model, sizes, device):
    generator = torch.Generator().manual_seed(1)
    words = len(model.encoder.dictionary)

    def tokens(length):
        drawn = torch.randint(4, words, (sizes["sentences"], length + 1), generator=generator)
        drawn[:, -1] = model.encoder.dictionary.eos()
        return drawn.to(device)

    source, target = tokens(sizes["source"]), tokens(sizes["target"])
    lengths = torch.full((sizes["sentences"],), sizes["source"] + 1, device=device)
    previous = torch.cat([target[:, -1:], target[:, :-1]], dim=1)
    return source, lengths, previous


class _Recur(torch.nn.Module):
    """The decoder's ``recur`` with tensor arguments, for torch's make_graphed_callables."""

    def __init__(self, decoder, encoder_out):
        super().__init__()
        self.decoder = decoder
        self.padding_mask = encoder_out["padding_mask"]
        self.sentences = encoder_out["sentences"]

    def forward(self, drives, annotations, summary):
        encoder_out = {
            "annotations": annotations,
            "padding_mask": self.padding_mask,
            "summary": summary,
            "sentences": self.sentences,
        }
        cache = self.decoder.initial_cache(encoder_out)
        prev_states, contexts, alphas, _ = self.decoder.recur(drives, encoder_out, cache, False)
        return prev_states, contexts, alphas


def _recurrence_step(model, batch, variant: str):
    """A function that runs the recurrence forward and backward once, the way ``variant`` says."""
    source, lengths, previous = batch
    decoder = model.decoder
    with torch.no_grad():
        encoder_out = model.encoder(source, lengths)
        drives = decoder.gru.project_inputs(decoder.embed_tokens(previous))
    inputs = [drives, encoder_out["annotations"], encoder_out["summary"]]
    inputs = [t.detach().requires_grad_() for t in inputs]
    recur = _Recur(decoder, encoder_out)
    if variant == "modules, graphed":
        recur = torch.cuda.make_graphed_callables(recur, tuple(inputs), allow_unused_input=True)
    form = decoder.fused_recurrence
    if variant == "written out":
        form._captured = Recurrence.apply  # the fused recurrence without graphs

    def step():
        if variant.startswith("modules"):
            outputs = recur(*inputs)
        else:
            cache = decoder.initial_cache(
                {**encoder_out, "annotations": inputs[1], "summary": inputs[2]}
            )
            outputs = form.compute(decoder, inputs[0], encoder_out, cache, False)[:3]
        loss = sum((o.float() * o.detach().float().cos()).sum() for o in outputs)
        loss.backward()

    return step


def _model_step(model, batch):
    source, lengths, previous = batch

    def step():
        logits, _ = model(source, lengths, previous)
        torch.log_softmax(logits.float(), dim=-1).mean().backward()

    return step


def _timed(step, device: str) -> dict:
    """Median milliseconds of ``step`` after the warm-up, the first step's (graphs are recorded
    there), and its peak memory above the start."""
    start = time.perf_counter()
    step()
    if device == "cuda":
        torch.cuda.synchronize()
    first = 1e3 * (time.perf_counter() - start)
    for _ in range(WARMUP - 1):
        step()
    if device != "cuda":
        start = time.perf_counter()
        step()
        return {"ms": 1e3 * (time.perf_counter() - start), "first_ms": first, "peak_mib": None}
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(REPEATS):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        step()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end))
    peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    return {"ms": statistics.median(times), "first_ms": first, "peak_mib": round(peak, 1)}


def measure(device: str, dry_run: bool) -> dict:
    sizes = DRY_RUN if dry_run else PAPER
    results = {}
    models_by_dtype = {}
    for precision in PRECISIONS:
        if device == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = precision == "float32, TF32 on"
        dtype = "bfloat16" if precision == "bfloat16" else "float32"
        if dtype not in models_by_dtype:
            models_by_dtype.clear()
            models_by_dtype[dtype] = _model(sizes, device, precision).train()
        model = models_by_dtype[dtype]
        batch = _batch(model, sizes, device)
        row = {}
        for variant in VARIANTS:
            if "graphed" in variant and device != "cuda":
                row[variant] = {"skipped": "CUDA graphs need a GPU"}
                continue
            form = model.decoder.fused_recurrence
            captured = form._captured
            try:
                row[variant] = _timed(_recurrence_step(model, batch, variant), device)
            except Exception as error:  # recorded; the other variants still run
                row[variant] = {"error": f"{type(error).__name__}: {error}".splitlines()[0]}
            finally:
                form._captured = captured
                model.zero_grad(set_to_none=True)
        for setting in ("plain", "fast"):
            CHOOSER._setting = setting  # read at every call: plain, the modules' own code
            try:
                row[f"model step, fast path {setting}"] = _timed(_model_step(model, batch), device)
            finally:
                CHOOSER._setting = None
                model.zero_grad(set_to_none=True)
        results[precision] = row
    return {"sizes": sizes, "warmup": WARMUP, "repeats": REPEATS, "results": results}


def run(kit: Kit) -> dict:
    flags = ["--dry-run"] if kit.dry_run else []
    output = kit.python("-m", "bench.gpu.recurrence", "--device", kit.device, *flags)
    return result_of(output)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes")
    args = parser.parse_args()
    print_result(measure(args.device, args.dry_run))


if __name__ == "__main__":
    main()
