#!/usr/bin/env python3
"""Peak memory of one rnnsearch training step at the paper's size on CPU, by precision.

RNNsearch-50 as in the paper (embeddings 620, GRUs 1000, alignment 1000, maxout 500, vocabulary
30,000), one batch of 80 sentences of 50 tokens on each side, cross-entropy summed over the
target tokens, forward and backward, in:
- float32 (the CPU fast path on, as on any CPU);
- bfloat16 autocast: float32 parameters under torch.autocast("cpu", torch.bfloat16) (what --amp
  does on a GPU);
- bfloat16: the model converted, as fairseq's --bf16 does (model.to(torch.bfloat16)).
Each in a process of its own: the step's peak resident memory above the resident memory before it
(model and batch built). Prints a Markdown table and the machine line; docs/precision.md holds the
results. About 3 minutes on 2 cores.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from bahdanau_tools import synthetic

PRECISIONS = {  # label: (parameters' dtype, autocast's dtype or None)
    "float32": (torch.float32, None),
    "bfloat16 autocast": (torch.float32, torch.bfloat16),
    "bfloat16": (torch.bfloat16, None),
}


def resident_mib() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def one_step(precision: str, vocabulary: int, sentences: int, length: int) -> dict:
    dtype, autocast = PRECISIONS[precision]
    torch.manual_seed(1)
    model = synthetic.build("rnnsearch", vocabulary, **synthetic.PAPER_SIZES).to(dtype).train()
    tokens = synthetic.sentences(model, sentences, length)
    prev = torch.cat([tokens[:, -1:], tokens[:, :-1]], dim=1)
    lengths = torch.full((sentences,), length + 1)
    before = resident_mib()
    start = time.perf_counter()
    with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
        logits, _ = model(tokens, lengths, prev)
        log_probs = F.log_softmax(logits.float(), dim=-1)
    F.nll_loss(log_probs.view(-1, log_probs.size(-1)), tokens.view(-1), reduction="sum").backward()
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "precision": precision,
        "before_mib": before,
        "peak_mib": peak,
        "step_mib": peak - before,
        "seconds": seconds,
    }


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vocabulary", type=int, default=30000)
    parser.add_argument("--sentences", type=int, default=80)
    parser.add_argument("--length", type=int, default=50, help="tokens per side, end excluded")
    parser.add_argument("--precision", choices=sorted(PRECISIONS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [
        f"--vocabulary={args.vocabulary}",
        f"--sentences={args.sentences}",
        f"--length={args.length}",
    ]
    if args.precision:  # one measurement, in this process
        print(json.dumps(one_step(args.precision, args.vocabulary, args.sentences, args.length)))
        return
    print("| precision | peak above the model and batch (MiB) | step seconds |\n|---|---|---|")
    for precision in PRECISIONS:
        child = subprocess.run(
            [sys.executable, "-m", __spec__.name, f"--precision={precision}", *sizes],
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(child.stdout.splitlines()[-1])
        print(f"| {precision} | {result['step_mib']:,.0f} | {result['seconds']:.1f} |", flush=True)
    print(
        f"\nrnnsearch at the paper's sizes, {args.sentences} sentences of {args.length} tokens "
        f"on each side, vocabulary {args.vocabulary:,}; torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads"
    )


if __name__ == "__main__":
    main()
