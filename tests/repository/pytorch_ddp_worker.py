"""One of two CPU workers of torch's DistributedDataParallel set up as fairseq's default
``--ddp-backend pytorch_ddp`` sets it up (no search for unused parameters), which fairseq 0.12
itself cannot run on a CPU: a tiny model trained on a batch of one-token targets between ordinary
ones. ``python -m tests.repository.pytorch_ddp_worker MODEL RANK INIT_FILE`` from the repository
root."""

import gc
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from ..support.models import build_tiny_model
from ..bahdanau_plugin.models.batches import SOURCES, TARGETS, prev_output_batch, source_batch

ONE_TOKEN_TARGETS = [[] for _ in SOURCES]


def main(model_name: str, rank: int, init_file: str) -> None:
    dist.init_process_group(
        "gloo",
        init_method=f"file://{init_file}",
        rank=rank,
        world_size=2,
        timeout=timedelta(seconds=60),
    )
    torch.manual_seed(rank)  # DDP starts every worker from rank 0's parameters
    model = build_tiny_model(model_name)
    ddp = DistributedDataParallel(model, find_unused_parameters=False)
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    for targets in (TARGETS, ONE_TOKEN_TARGETS, TARGETS):
        prev_tokens = prev_output_batch(model.decoder.dictionary, targets)
        logits, _ = ddp(src_tokens, src_lengths, prev_tokens)
        torch.log_softmax(logits, dim=-1).sum().backward()
    # The process group's threads must stop while Python is alive: released at interpreter exit
    # (DDP keeps a reference), a gloo thread dropping a tensor aborts the process ("terminate called
    # without an active exception", pytorch/pytorch#179291).
    del ddp, logits
    gc.collect()
    dist.destroy_process_group()
    print("trained 3 batches")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
