"""Section: where a step's time goes on the GPU.

rnnsearch at the paper's sizes (random weights), profiled with torch.profiler:
- one training step (forward and backward, 80 sentences of 50 tokens on each side) and one beam
  search (beam 12, 80 sentences, every hypothesis forced to 20 tokens): GPU kernels launched per
  target position, and the share of the step's wall time in which no kernel ran;
- the beams' reorders after the first of a search, under torch.cuda.set_sync_debug_mode("error"):
  any host synchronization in them fails;
- rnnsearch and rnnencdec at those sizes: operators and kernels per target position in a training
  forward pass, its backward pass and a beam step, as bench/operator_counts.py counts them on a CPU
  (docs/performance.md), so that the two machines' counts compare.
On a CPU (a dry run) it counts top-level operators instead of kernels, at tiny sizes.
"""

import torch
from fairseq.sequence_generator import SequenceGenerator
from torch.profiler import ProfilerActivity, profile

from bench import models
from bench.operator_counts import device_kernels, operators_per_target_position

from .kit import Kit

DRY_RUN_SIZES = dict.fromkeys(models.PAPER_SIZES, 8)
SHAPES = {
    "paper": dict(words=30000, sentences=80, length=50, beam=12, decoded=20),
    "dry run": dict(words=50, sentences=4, length=6, beam=3, decoded=4),
}


def _model(kit: Kit, words: int, name: str = "rnnsearch"):
    sizes = DRY_RUN_SIZES if kit.dry_run else models.PAPER_SIZES
    return models.build(name, words, **sizes).to(kit.device)


def _batch(model, sentences: int, length: int, device: str):
    tokens = models.sentences(model, sentences, length, device)
    prev = torch.cat([tokens[:, -1:], tokens[:, :-1]], dim=1)
    return tokens, torch.full((sentences,), length + 1, device=device), prev


def _training_step(model, batch):
    tokens, lengths, prev = batch
    logits, _ = model(tokens, lengths, prev)
    torch.log_softmax(logits, dim=-1).sum().backward()


def _profiled(kit: Kit, step, positions: int) -> dict:
    """``step`` once to warm up, once profiled: operations per target position and idle share."""
    step()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if kit.device == "cuda" else [])
    with profile(activities=activities) as profiler:
        step()
        if kit.device == "cuda":
            torch.cuda.synchronize()
    events = profiler.events()
    if kit.device == "cuda":
        launched = device_kernels(events)
    else:
        launched = [e for e in events if e.cpu_parent is None and e.name.startswith("aten::")]
    spans = sorted((e.time_range.start, e.time_range.end) for e in launched)
    wall = max(e.time_range.end for e in events) - min(e.time_range.start for e in events)
    return {
        "unit": "kernels" if kit.device == "cuda" else "top-level operators",
        "per_target_position": len(launched) / positions,
        "idle_share": 1 - _covered(spans) / wall if wall else None,
        "step_ms": wall / 1000,
    }


def _covered(spans) -> float:
    """The length of the union of sorted intervals."""
    total, end = 0.0, float("-inf")
    for start, stop in spans:
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def _reorders_synchronize(kit: Kit, model, shape) -> str:
    """Reorders of a search after its first, as fairseq's beam search makes them, under CUDA's
    synchronization check."""
    if kit.device != "cuda":
        return "not checked on the CPU"
    tokens, lengths, _ = _batch(model, shape["sentences"], shape["length"], kit.device)
    rows = shape["sentences"] * shape["beam"]
    expand = torch.arange(shape["sentences"], device=kit.device).repeat_interleave(shape["beam"])
    encoder_out = model.encoder.reorder_encoder_out(model.encoder(tokens, lengths), expand)
    state = {}
    first = torch.full((rows, 1), model.decoder.dictionary.eos(), device=kit.device)
    model.decoder(first, encoder_out, incremental_state=state)
    within = torch.arange(rows, device=kit.device).view(-1, shape["beam"]).flip(1).reshape(-1)
    model.decoder.reorder_incremental_state_scripting(state, within)  # the search's first check
    encoder_out = model.encoder.reorder_encoder_out(encoder_out, within)
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            model.decoder.reorder_incremental_state_scripting(state, within)
            encoder_out = model.encoder.reorder_encoder_out(encoder_out, within)
        return "none"
    except RuntimeError as error:
        return f"synchronized: {error}"
    finally:
        torch.cuda.set_sync_debug_mode("default")


def run(kit: Kit) -> dict:
    shape = SHAPES["dry run" if kit.dry_run else "paper"]
    model = _model(kit, shape["words"]).train()
    batch = _batch(model, shape["sentences"], shape["length"], kit.device)
    training = _profiled(kit, lambda: _training_step(model, batch), shape["length"] + 1)
    model.eval()
    generator = SequenceGenerator(
        [model],
        model.decoder.dictionary,
        beam_size=shape["beam"],
        min_len=shape["decoded"],
        max_len_a=0,
        max_len_b=shape["decoded"],
    )
    sample = {"net_input": {"src_tokens": batch[0], "src_lengths": batch[1]}}
    with torch.no_grad():
        search = _profiled(kit, lambda: generator.generate([model], sample), shape["decoded"] + 1)
        synchronizations = _reorders_synchronize(kit, model, shape)
    return {
        "shape": shape,
        "operator_counts": {
            name: operators_per_target_position(_model(kit, shape["words"], name), kit.device)
            for name in ("rnnsearch", "rnnencdec")
        },
        "training_step": training,
        "beam_search": search,
        "reorder_synchronizations": synchronizations,
    }
