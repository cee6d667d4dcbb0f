"""Section 3: the demo corpus trained in each of fairseq's precisions learns like float32.

rnnsearch at the demo's sizes, 300 updates each (demo.py), with fairseq-train's own precision
options; the last validation loss of each against float32's (the issue's bound: within 5%).
"""

from . import demo
from .kit import Kit

BOUND = 0.05
PRECISIONS = {
    "float32": [],
    "--fp16": ["--fp16"],
    "--bf16": ["--bf16"],
    "--amp": ["--amp"],
    "--memory-efficient-fp16": ["--memory-efficient-fp16"],
}
# On a CPU (a dry run) fp16's trainer builds its flat master weights and its loss scaler on CUDA.
ON_CPU = {
    "--fp16": [
        "--fp16-no-flatten-grads",
        "--fp16-init-scale",
        "1",
        "--fp16-scale-window",
        "1000000",
    ],
    "--memory-efficient-fp16": ["--fp16-init-scale", "1", "--fp16-scale-window", "1000000"],
}


def run(kit: Kit) -> dict:
    losses = {}
    for name, flags in PRECISIONS.items():
        extra = ON_CPU.get(name, []) if kit.dry_run else []
        try:
            losses[name], _ = demo.train(kit, name.strip("-"), [*flags, *extra])
        except RuntimeError as error:
            losses[name] = str(error).strip().splitlines()[-1]
    reference = losses["float32"]
    rows = {}
    for name, loss in losses.items():
        if isinstance(loss, float):
            difference = (loss - reference) / reference
            rows[name] = {
                "loss": loss,
                "difference": difference,
                "within": abs(difference) <= BOUND,
            }
        else:
            rows[name] = {"error": loss, "within": False}
    return {
        "updates": demo.DRY_RUN_UPDATES if kit.dry_run else demo.UPDATES,
        "bound": BOUND,
        "losses": rows,
        "passed": all(row["within"] for row in rows.values()),
    }
