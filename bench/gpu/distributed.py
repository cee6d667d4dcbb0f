"""Section: fairseq's distributed training on the GPU trains as one process does.

As tests/repository/test_distributed.py on the CPU: two fairseq-train processes, each taking one of
every two batches and all-reducing their gradients, against one process that accumulates the same
two batches (``--update-freq 2``) for the same updates; their logged losses and final parameters
must agree. Both workers run on the one GPU: fairseq 0.12 with ``--distributed-no-spawn`` puts a
worker on its ``--device-id`` (0 unless given: distributed/utils.py's distributed_main), and NCCL
refuses two ranks on one device where gloo does not, so the workers start with explicit ranks, gloo,
and a tcp:// rendezvous on a free port. The reference runs with ``--distributed-world-size 1``,
which keeps fairseq from spreading it over every GPU a machine has.

Each case is a precision and a DDP backend: float32 with fairseq's own all-reduce (legacy_ddp,
the CPU test's) and with torch's (pytorch_ddp, fairseq's default), and --fp16 with pytorch_ddp
(the plugin refuses legacy_ddp in half precision: docs/precision.md). A dry run has the first
only: fairseq's pytorch_ddp gives torch's DDP a device id, which a model on the CPU refuses. The
runs go side by side: they measure values, not time.
"""

import re
import socket
from pathlib import Path

import torch

import bahdanau_plugin  # noqa: F401  (fairseq's checkpoints load with torch's safe loading)

from . import demo
from .kit import Kit, Started, outputs

# precision options and DDP backend, by case
CASES = {
    "float32, legacy_ddp": ([], "legacy_ddp"),
    "float32, pytorch_ddp": ([], "pytorch_ddp"),
    "--fp16, pytorch_ddp": (["--fp16"], "pytorch_ddp"),
}
DRY_RUN_CASES = ["float32, legacy_ddp"]
UPDATES, DRY_RUN_UPDATES = 8, 2
# |distributed - single| <= TOLERANCE x max(1, |single|), over the parameters and over the losses.
# In float32 only rounding may differ (tests/repository/test_distributed.py). A --fp16 model keeps
# and saves float16 parameters, spaced up to 2^-10 apart relative to their size, and its gradients
# are float16 too: torch's DDP sums the two workers' in float16 and averages them, where one process
# accumulates them in its float32 master weights, so each update may round a parameter a step the
# other way; over the run's 8 updates, 16 steps (2^-6) bound that, where a wrong gradient moves a
# parameter by its own size.
TOLERANCE = {"float32": 1e-5, "--fp16": 2**-6}
# Losses are logged with three decimals: two that agree may differ by 1e-3 once logged.
LOGGED = 2e-3


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _precision(case: str) -> str:
    return case.split(",")[0]


def _save_dir(kit: Kit, name: str) -> Path:
    return demo.checkpoints(kit, re.sub(r"\W+", "-", name).strip("-"))


def _cases(kit: Kit) -> list:
    return DRY_RUN_CASES if kit.dry_run else list(CASES)


def _start(kit: Kit, name: str, precision: str, *options) -> Started:
    updates = DRY_RUN_UPDATES if kit.dry_run else UPDATES
    flags = [] if precision == "float32" else [precision]
    cases = _cases(kit)
    side_by_side = 2 * len(cases) + len({_precision(case) for case in cases})
    return kit.start(*demo.training(kit, _save_dir(kit, name), "--batch-size", 16,
                                    "--max-update", updates, "--disable-validation",
                                    "--log-interval", 1, *flags, *options),
                     side_by_side=side_by_side)  # fmt: skip


def _single(kit: Kit, precision: str) -> Started:
    options = ["--update-freq", 2, "--distributed-world-size", 1]
    return _start(kit, f"single {precision}", precision, *options)


def _workers(kit: Kit, case: str) -> list:
    distributed = ["--distributed-world-size", 2, "--distributed-no-spawn",
                   "--distributed-backend", "gloo", "--ddp-backend", CASES[case][1],
                   "--distributed-init-method", f"tcp://127.0.0.1:{_free_port()}"]  # fmt: skip
    return [
        _start(kit, case, _precision(case), *distributed, "--distributed-rank", rank)
        for rank in range(2)
    ]


def losses(log: str) -> list:
    """The training losses of a log's train_inner lines, update by update."""
    return [float(loss) for loss in re.findall(r"train_inner \| .*?loss=([\d.]+)", log)]


def _parameters(save_dir: Path) -> dict:
    """The parameters of the run's last checkpoint in float32 (not the checkpoint's fingerprints,
    bahdanau_plugin/fingerprints.py: integers)."""
    state = torch.load(save_dir / "checkpoint_last.pt", map_location="cpu")["model"]
    return {name: value.float() for name, value in state.items() if value.is_floating_point()}


def agreement(single: tuple, distributed: tuple, precision: str) -> dict:
    """How far the distributed run's losses and parameters are from the single process's, and
    whether within the bounds; each run given as (losses, parameters)."""
    (single_losses, reference), (distributed_losses, parameters) = single, distributed
    same_updates = len(single_losses) == len(distributed_losses) > 0
    pairs = zip(single_losses, distributed_losses)
    loss = max(abs(a - b) for a, b in pairs) if same_updates else None
    loss_bound = LOGGED + TOLERANCE[precision] * max([1.0, *map(abs, single_losses)])
    worst = max(reference, key=lambda name: (parameters[name] - reference[name]).abs().max())
    difference = (parameters[worst] - reference[worst]).abs().max().item()
    largest = max(value.abs().max().item() for value in reference.values())
    return {
        "updates": len(distributed_losses),
        "losses": loss,
        "losses_bound": loss_bound,
        "parameters": difference,
        "worst_parameter": worst,
        "largest_parameter": largest,
        "parameters_relative": difference / max(1.0, largest),
        "tolerance": TOLERANCE[precision],
        "passed": same_updates
        and loss <= loss_bound
        and difference <= TOLERANCE[precision] * max(1.0, largest),
    }


def run(kit: Kit) -> dict:
    cases = _cases(kit)
    demo.data_bin(kit)  # before the runs that read it start side by side
    started = {f"single {_precision(case)}": [_single(kit, _precision(case))] for case in cases}
    started.update({case: _workers(kit, case) for case in cases})
    ended = {}
    for name, processes in started.items():
        try:
            ended[name] = outputs(processes, timeout=300)[0]  # rank 0 logs the losses
        except RuntimeError as error:
            ended[name] = error
    results = {}
    for case in cases:
        runs = [f"single {_precision(case)}", case]
        failed = [ended[name] for name in runs if isinstance(ended[name], RuntimeError)]
        if failed:  # recorded; the other cases still compare
            results[case] = {"error": str(failed[0]).strip().splitlines()[-1], "passed": False}
            continue
        single, distributed = (
            (losses(ended[name]), _parameters(_save_dir(kit, name))) for name in runs
        )
        results[case] = agreement(single, distributed, _precision(case))
    return {
        "updates": DRY_RUN_UPDATES if kit.dry_run else UPDATES,
        "cases": results,
        "passed": all(result["passed"] for result in results.values()),
    }
