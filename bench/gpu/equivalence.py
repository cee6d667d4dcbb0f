"""Section 2: the CPU and the GPU compute the same model.

Values (log-probabilities) and gradients of rnnsearch and rnnencdec on a left-padded batch, the
CPU's float32 (with its fast path) against the GPU's, with TF32 off (the CPU's precision) and on
(torch's default for cuDNN's RNNs, the encoder's GRUs); and the demo model's translations on both.
Run as ``python -m bench.gpu.equivalence --device cuda`` for one TF32 setting (it is fixed when
CUDA starts, by NVIDIA_TF32_OVERRIDE), it prints JSON.
"""

import argparse
import copy

import torch
from fairseq.data import data_utils

from tests.support import models

from . import demo
from .kit import Kit, print_result, result_of

TOLERANCE = 1e-5
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
    return model.eval()


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


def _values_and_gradients(model, batch, device):
    model = copy.deepcopy(model).to(device)
    src_tokens, src_lengths, prev_tokens, target = (tensor.to(device) for tensor in batch)
    log_probs = model.get_normalized_probs(
        model(src_tokens, src_lengths, prev_tokens), log_probs=True
    )
    real = target.ne(model.decoder.dictionary.pad())
    loss = -log_probs.gather(2, target.unsqueeze(2)).squeeze(2)[real].sum()
    loss.backward()
    gradients = {name: p.grad.cpu() for name, p in model.named_parameters()}
    return log_probs.detach().cpu(), gradients


def compare(device: str) -> dict:
    results = {}
    for name in models.MODELS:
        model = _model(name)
        batch = _batch(model.decoder.dictionary)
        cpu_values, cpu_gradients = _values_and_gradients(model, batch, "cpu")
        values, gradients = _values_and_gradients(model, batch, device)
        worst = max(
            cpu_gradients, key=lambda key: (gradients[key] - cpu_gradients[key]).abs().max()
        )
        results[name] = {
            "log_probs": (values - cpu_values).abs().max().item(),
            "gradients": (gradients[worst] - cpu_gradients[worst]).abs().max().item(),
            "worst_gradient": worst,
            "largest_gradient": max(g.abs().max().item() for g in cpu_gradients.values()),
        }
    return results


def run(kit: Kit) -> dict:
    measured = {}
    for tf32 in (False, True):
        output = kit.python("-m", "bench.gpu.equivalence", "--device", kit.device, tf32=tf32)
        measured["tf32 on" if tf32 else "tf32 off"] = result_of(output)
    _, checkpoint = demo.train(kit, "float32", [])
    on_cpu = demo.translations(kit, checkpoint, "cpu", tf32=False)
    translated = {}
    for tf32 in (False, True):
        on_device = demo.translations(kit, checkpoint, kit.device, tf32=tf32)
        same = sum(a == b for a, b in zip(on_cpu, on_device))
        translated["tf32 on" if tf32 else "tf32 off"] = {"same": same, "sentences": len(on_cpu)}
    exact = measured["tf32 off"]
    return {
        "tolerance": TOLERANCE,
        "values_and_gradients": measured,
        "translations": translated,
        "passed": all(max(m["log_probs"], m["gradients"]) <= TOLERANCE for m in exact.values())
        and translated["tf32 off"]["same"] == translated["tf32 off"]["sentences"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    print_result(compare(parser.parse_args().device))


if __name__ == "__main__":
    main()
