"""fairseq-train's main in this process, for any architecture in any precision: its log and the
peak GPU memory it took. Runs one after another share one process, and so one start-up of torch,
fairseq and CUDA (paper_size.py's measurements).

fairseq 0.12 turns --bf16 into --tpu when it parses fairseq-train's arguments. The plugin undoes
that for its own architectures only (fairseq_patches.train_in_bfloat16_on_gpus_and_cpus); to
measure fairseq's lstm in bfloat16 too, this undoes it for the run it starts.
"""

import gc
import io
import logging
from typing import List, Optional, Tuple

# isort: off
from fairseq_cli import (
    train,
)  # first: it sets up logging as fairseq-train does (bench.common reads its log)

# isort: on
import torch
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf


def parse(arguments: List) -> object:
    """fairseq-train's configuration from its command-line arguments, --bf16 meaning bfloat16."""
    args = options.parse_args_and_arch(options.get_training_parser(), list(map(str, arguments)))
    args.tpu = False  # no TPU here: --bf16 means bfloat16 on this device
    return convert_namespace_to_omegaconf(args)


class PeakMemory:
    """The most GPU memory allocated within the block beyond what was allocated before it, in MiB
    (None on the CPU); what earlier runs in the process left is collected first."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"

    def __enter__(self):
        gc.collect()
        if self.cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            self.before = torch.cuda.memory_allocated()
        return self

    def reset(self) -> None:
        """Count from here on (after a warm-up, say), what is allocated now included."""
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()

    def __exit__(self, *_):
        self.mib = (torch.cuda.max_memory_allocated() - self.before) / 2**20 if self.cuda else None


def run(cfg) -> Tuple[str, Optional[float]]:
    """fairseq-train with this configuration (``parse``), run to its end here: what it logged (as
    fairseq-train logs it, levels and logger names included) and its peak GPU memory in MiB."""
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("%(levelname)s | %(name)s | %(message)s"))
    logging.getLogger().addHandler(handler)
    try:
        with PeakMemory("cpu" if cfg.common.cpu else "cuda") as peak:
            train.main(cfg)
    finally:
        logging.getLogger().removeHandler(handler)
    return log.getvalue(), peak.mib
