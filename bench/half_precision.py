#!/usr/bin/env python3
"""How far half precision moves the gradients of the alignment model and the decoder's first layers
from float64's, at the paper's initialization (Appendix B.1), on CPU.

One teacher-forced batch through rnnsearch (sizes below), loss = fairseq's cross-entropy; the
relative error ||g - g64|| / ||g64|| of each parameter's gradient, for:
- autocast: float32 parameters under torch.autocast (fairseq's --amp);
- pure: the whole model converted, as fairseq's --fp16 / --bf16 do (model.half(), model.bfloat16());
- float32, with and without the plugin's CPU fast path (bahdanau_plugin/cpu_fast_path).
Float16 runs scale the loss by 2^7, fairseq's initial --fp16 loss scale.
W_a's and U_a's gradients are proportional to v_a, which starts at 0: they are measured with
v_a ~ N(0, 0.01^2) instead ("after the first update"). Prints a Markdown table; see
docs/precision.md.
"""

import argparse
import platform

import torch

from bahdanau_tools.precision import MODES, PARAMETERS, batch, build, relative_errors


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--size", type=int, default=64, help="every layer size (paper: 1000, 620, 500)"
    )
    parser.add_argument("--vocabulary", type=int, default=500)
    parser.add_argument("--sentences", type=int, default=16)
    parser.add_argument("--length", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"| gradient (relative error vs float64) | {' | '.join(MODES)} |")
    print("|---|" + "---|" * len(MODES))
    rows = {}
    for v_a_std, names in (
        (0.0, ["v_a", "W_s", "[W_z; W_r; W]", "E (target)"]),
        (0.01, ["W_a", "U_a"]),
    ):
        model = build(args.size, args.vocabulary, v_a_std, args.seed)
        inputs = batch(model, args.sentences, args.length, args.seed)
        errors = {label: relative_errors(model, inputs, MODES[label]) for label in MODES}
        for name in names:
            rows[name] = [errors[label][name] for label in MODES]
    for name in PARAMETERS:
        print(f"| {name} | " + " | ".join(f"{value:.2g}" for value in rows[name]) + " |")
    print(
        f"\nMachine: {platform.machine()}, torch {torch.__version__}, sizes {args.size}, "
        f"vocabulary {args.vocabulary}, {args.sentences} sentences of {args.length} tokens."
    )


if __name__ == "__main__":
    main()
