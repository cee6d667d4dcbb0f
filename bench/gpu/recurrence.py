"""Section: the decoder's recurrence on the GPU, each way the fast path can run it, timed alone.

RNNsearch's decoder at the paper's sizes (n = n' = 1000, embeddings 620), 80 sentences of 50
source and 50 target tokens, forward and backward passes of ``ConditionalGRUDecoder.recur`` with a
random weighting of its outputs, in float32 with TF32 off and on and in bfloat16 (the model
converted, the alignment model float32: docs/precision.md). The same code each time, the modules'
own, run four ways (speed/):

- ``modules, eager``: as PyTorch runs it (what runs with the fast path set to plain);
- ``step compiled``: each target position's step compiled by torch.compile (speed/compiling.py);
- ``loop captured``: the loop replayed from CUDA graphs, its step run as written
  (speed/capture.py);
- ``step compiled, loop captured``: both, what the default runs in training on a GPU.

Each is timed with CUDA events over ``REPEATS`` steps after ``WARMUP`` (compiling and recording
happen then: ``first_ms``), median step; and its peak memory above the model's. Also one whole
training step of the model (encoder, decoder, output layer, loss), plain and by default. Run as
``python -m bench.gpu.recurrence [--device cuda] [--dry-run]``, it prints JSON.
"""

import argparse
import contextlib
import statistics
import time
from unittest import mock

import torch

from bahdanau_plugin import speed
from bahdanau_plugin.speed import setting
from bench import models

from .kit import Kit, print_result, result_of

PAPER = dict(words=30000, sentences=80, source=50, target=50)
DRY_RUN = dict(words=50, sentences=4, source=6, target=5)
WARMUP, REPEATS = 3, 10
PRECISIONS = ("float32, TF32 off", "float32, TF32 on", "bfloat16")
# variant: (the step compiled, the loop captured)
VARIANTS = {
    "modules, eager": (False, False),
    "step compiled": (True, False),
    "loop captured": (False, True),
    "step compiled, loop captured": (True, True),
}


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


@contextlib.contextmanager
def _fast_path(compiled: bool, captured: bool):
    """Within: the fast path's compiling and capturing each on or off (the decoder calls them
    through the package's names)."""
    saved = speed.compiled, speed.captured
    if not compiled:
        speed.compiled = lambda method, **_: method
    if not captured:
        speed.captured = lambda recur: recur
    try:
        yield
    finally:
        speed.compiled, speed.captured = saved


def _setting(mode: str):
    """Within: the fast path set to ``mode``, read at every call (plain: the modules eagerly)."""
    return mock.patch.object(setting, "mode", lambda: mode)


def _is_float_tensor(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _recurrence_step(model, batch):
    """A function that runs the recurrence forward and backward once, through
    ``speed.captured(decoder.recur)`` as the decoder does."""
    source, lengths, previous = batch
    decoder = model.decoder
    with torch.no_grad():
        encoder_out = model.encoder(source, lengths)
        drives = decoder.gru.project_inputs(decoder.embed_tokens(previous))
    drives = drives.detach().requires_grad_()
    encoder_out = {
        key: value.detach().requires_grad_() if _is_float_tensor(value) else value
        for key, value in encoder_out.items()
    }

    def step():
        cache = decoder.initial_cache(encoder_out)
        outputs = speed.captured(decoder.recur)(drives, encoder_out, cache)[:3]
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
        for variant, (compiled, captured) in VARIANTS.items():
            if captured and device != "cuda":
                row[variant] = {"skipped": "CUDA graphs need a GPU"}
                continue
            try:  # each way as it says, whatever BAHDANAU_FAST_PATH the kit was started with
                with _setting("auto"), _fast_path(compiled, captured):
                    row[variant] = _timed(_recurrence_step(model, batch), device)
            except Exception as error:  # recorded; the other variants still run
                row[variant] = {"error": f"{type(error).__name__}: {error}".splitlines()[0]}
            finally:
                model.zero_grad(set_to_none=True)
        for mode in ("plain", "auto"):
            try:
                with _setting(mode):
                    row[f"model step, fast path {mode}"] = _timed(_model_step(model, batch), device)
            finally:
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
