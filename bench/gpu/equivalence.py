"""Section: the CPU and the GPU compute the same model.

Values (log-probabilities) and gradients of rnnsearch and rnnencdec on a left-padded batch, the
CPU's float32 (with its fast path) against the GPU's, with TF32 off (the CPU's precision) and in
cuDNN only (torch's default: cuDNN's RNNs, the encoder's GRUs, in TF32); in training mode, as
fairseq-train computes them (cuDNN's GRU on the GPU), and in eval mode, as an analysis of a
trained model takes them (torch's own CUDA GRU: gru_encoder.run_rnn); and the demo model's
translations on both. Run as ``python -m bench.gpu.equivalence --device cuda`` for one TF32
setting (fixed when CUDA starts: kit.py's TF32), it prints JSON.

Both are float32, so they differ by rounding, which grows with the values: each difference is
held relative to the largest value it is a difference of, |GPU - CPU| <= TOLERANCE x max(1,
largest |CPU|), the largest over the log-probabilities, or over every parameter's gradient
(docs/gpu-kit.md says why).
"""

import argparse
import copy

import torch
from fairseq.data import data_utils

from bench import models

from . import demo
from .kit import Kit, outputs, print_result, result_of

TOLERANCE = 1e-5
# The demo model whose translations are compared is trained to its floor (docs/gpu.md), where no
# two hypotheses of a beam come near a tie.
TRAINED, DRY_RUN_TRAINED = 300, 3
MODES = ("training", "eval")
TF32_SETTINGS = ("off", "cuDNN only")
SIZES = dict(encoder_embed_dim=16, decoder_embed_dim=16, encoder_hidden_dim=16,
             decoder_hidden_dim=16, attention_dim=16, maxout_dim=8)  # fmt: skip
SOURCES = [[4, 5, 6, 7, 8, 9, 10], [11, 4, 12], [13]]
TARGETS = [[5, 6, 7, 8, 9], [12, 4, 14], []]


def _model(name: str):
    model = models.build(name, 36, **SIZES)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():  # away from the paper's start, where the alignment is uniform
        for parameter in model.parameters():
            parameter.copy_(0.3 * torch.randn(parameter.shape, generator=generator))
    return model


def _batch(dictionary):
    """Left-padded sources and right-padded targets, as fairseq's translation task makes them."""
    eos, pad = dictionary.eos(), dictionary.pad()
    sources = [torch.tensor(words + [eos]) for words in SOURCES]
    targets = [torch.tensor(words + [eos]) for words in TARGETS]
    return (
        data_utils.collate_tokens(sources, pad, left_pad=True),
        torch.tensor([len(source) for source in sources]),
        data_utils.collate_tokens(targets, pad, eos, left_pad=False, move_eos_to_beginning=True),
        data_utils.collate_tokens(targets, pad, left_pad=False),
    )


def _values_and_gradients(model, batch, device, mode):
    model = copy.deepcopy(model).to(device).train(mode == "training")  # dropout is 0
    src_tokens, src_lengths, prev_tokens, target = (tensor.to(device) for tensor in batch)
    log_probs = model.get_normalized_probs(
        model(src_tokens, src_lengths, prev_tokens), log_probs=True
    )
    real = target.ne(model.decoder.dictionary.pad())
    loss = -log_probs.gather(2, target.unsqueeze(2)).squeeze(2)[real].sum()
    loss.backward()
    gradients = {name: p.grad.cpu() for name, p in model.named_parameters()}
    return log_probs.detach().cpu(), gradients


def difference(measured: torch.Tensor, reference: torch.Tensor, largest: float) -> dict:
    """The largest absolute difference, and that over max(1, the largest |reference value|)."""
    absolute = (measured - reference).abs().max().item()
    return {"absolute": absolute, "relative": absolute / max(1.0, largest)}


def within(measured: dict) -> bool:
    return max(measured["log_probs"]["relative"], measured["gradients"]["relative"]) <= TOLERANCE


def compare(device: str) -> dict:
    results = {}
    for mode in MODES:
        for name in models.MODELS:
            model = _model(name)
            batch = _batch(model.decoder.dictionary)
            cpu_values, cpu_gradients = _values_and_gradients(model, batch, "cpu", mode)
            values, gradients = _values_and_gradients(model, batch, device, mode)
            worst = max(
                cpu_gradients, key=lambda key: (gradients[key] - cpu_gradients[key]).abs().max()
            )
            largest_gradient = max(g.abs().max().item() for g in cpu_gradients.values())
            largest_log_prob = cpu_values.abs().max().item()
            results.setdefault(mode, {})[name] = {
                "log_probs": difference(values, cpu_values, largest_log_prob),
                "largest_log_prob": largest_log_prob,
                "gradients": difference(gradients[worst], cpu_gradients[worst], largest_gradient),
                "worst_gradient": worst,
                "largest_gradient": largest_gradient,
            }
    return results


def run(kit: Kit) -> dict:
    # three processes at once: the two measurements and the training, then the three translations
    measuring = [
        kit.start("-m", "bench.gpu.equivalence", "--device", kit.device, tf32=tf32, side_by_side=3)
        for tf32 in TF32_SETTINGS
    ]
    updates = DRY_RUN_TRAINED if kit.dry_run else TRAINED
    training = demo.start_training(kit, "float32", "--max-update", updates, side_by_side=3)
    _, *measured = outputs([training, *measuring])
    measured = dict(zip(TF32_SETTINGS, map(result_of, measured)))
    checkpoint = demo.checkpoints(kit, "float32") / "checkpoint_last.pt"
    translating = [
        demo.start_translating(kit, checkpoint, device, tf32, side_by_side=3)
        for device, tf32 in [("cpu", "off"), *((kit.device, tf32) for tf32 in TF32_SETTINGS)]
    ]
    on_cpu, *on_device = map(demo.translations, outputs(translating))
    translated = {
        tf32: {"same": sum(a == b for a, b in zip(on_cpu, each)), "sentences": len(on_cpu)}
        for tf32, each in zip(TF32_SETTINGS, on_device)
    }
    exact = measured["off"]
    return {
        "tolerance": TOLERANCE,
        "values_and_gradients": measured,
        "translations": translated,
        "passed": all(within(m) for models in exact.values() for m in models.values())
        and translated["off"]["same"] == translated["off"]["sentences"] > 0,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    print_result(compare(parser.parse_args().device))


if __name__ == "__main__":
    main()
