"""fairseq-train, for any architecture in any precision, then the peak GPU memory it took:
``python -m bench.gpu.train FAIRSEQ_TRAIN_ARGUMENTS``.

fairseq 0.12 turns --bf16 into --tpu when it parses fairseq-train's arguments. The plugin undoes
that for its own architectures only (fairseq_patches.train_in_bfloat16_on_gpus_and_cpus); to
measure fairseq's lstm in bfloat16 too, this launcher undoes it for the run it starts, and then
runs fairseq-train's own main.
"""

import sys

# isort: off
from fairseq_cli import (
    train,
)  # first: it sets up logging as fairseq-train does (bench.benchmark reads it)

# isort: on
import torch
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.distributed import utils as distributed_utils

PEAK_LINE = "peak GPU memory (MiB):"


def main(arguments):
    args = options.parse_args_and_arch(options.get_training_parser(), arguments)
    args.tpu = False  # no TPU here: --bf16 means bfloat16 on this device
    distributed_utils.call_main(convert_namespace_to_omegaconf(args), train.main)
    if torch.cuda.is_available():
        print(f"{PEAK_LINE} {torch.cuda.max_memory_allocated() / 2**20:.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
