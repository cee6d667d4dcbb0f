"""Section: the demo corpus trained in each of fairseq's precisions learns like float32.

rnnsearch at the demo's sizes (demo.py) with fairseq-train's own precision options, validated
every VALIDATE_EVERY updates for UPDATES updates, the five runs side by side (they measure values,
not time). At the demo corpus's floor every precision agrees, so the comparison stops before it,
at the point of float32's curve that ``comparison_point`` picks: where its loss still falls,
clearly above the floor, and not yet steeply (in the steep fall that comes before the floor, a
run a few updates ahead of another differs from it by far more than BOUND). Each precision's
average validation loss up to that point, the area under its curve, is held to float32's within
BOUND (the issue's 5%): a precision that learns slower or not at all raises it, and it averages
out the few percent by which single validations of runs that learn alike differ. The run also
says whether float32 learned: its loss at that point at least LEARNED below its first.

fairseq's lstm at matched sizes is trained in float32 and with --amp beside them, and compared the
same way: where a precision of rnnsearch falls outside BOUND, whether lstm's does too tells the
model's part from fairseq's and torch's (docs/precision.md).

UPDATES, VALIDATE_EVERY, STEEP and ABOVE_FLOOR come from the curves of float32, --bf16 and --fp16
on the demo corpus (docs/gpu-kit.md).
"""

from typing import Dict, Optional

from . import demo
from .kit import Kit

BOUND = 0.05
UPDATES, VALIDATE_EVERY = 120, 20
DRY_RUN_UPDATES, DRY_RUN_VALIDATE_EVERY = 4, 2
# A fall between two validations of more than STEEP of the loss is the steep one.
STEEP = 0.25
# Bits per word, far above the demo corpus's floor: losses near the floor compare in nothing but
# noise.
ABOVE_FLOOR = 0.5
LEARNED = 0.25
PRECISIONS = {
    "float32": [],
    "--fp16": ["--fp16"],
    "--bf16": ["--bf16"],
    "--amp": ["--amp"],
    "--memory-efficient-fp16": ["--memory-efficient-fp16"],
}
# fairseq's lstm, the yardstick: does it learn under --amp as in float32?
LSTM_PRECISIONS = {"float32": [], "--amp": ["--amp"]}
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


def comparison_point(curve: Dict[int, float]) -> Optional[int]:
    """The last validation (by its number of updates) at which float32's loss still falls (is
    below the validation before), by less than STEEP of it, and is at least ABOVE_FLOOR; None if
    there is none."""
    points = sorted(curve)
    falling = [
        after
        for before, after in zip(points, points[1:])
        if (1 - STEEP) * curve[before] < curve[after] < curve[before]
        and curve[after] >= ABOVE_FLOOR
    ]
    return falling[-1] if falling else None


def _schedule(kit: Kit) -> list:
    updates, every = (
        (DRY_RUN_UPDATES, DRY_RUN_VALIDATE_EVERY) if kit.dry_run else (UPDATES, VALIDATE_EVERY)
    )
    # validated at those updates only, not at the ends of epochs too
    return ["--max-update", updates, "--validate-interval-updates", every,
            "--validate-interval", 1000000]  # fmt: skip


def average_loss(curve: Dict[int, float], point: int) -> float:
    """The average of a curve's validation losses up to ``point``, that one included."""
    losses = [loss for updates, loss in curve.items() if updates <= point]
    return sum(losses) / len(losses)


def compare(curves: Dict[str, object]) -> dict:
    """Each precision's average loss against float32's, up to float32's comparison point;
    ``curves`` holds a validation curve, or an error, per precision."""
    reference = curves["float32"]
    point = comparison_point(reference) if isinstance(reference, dict) else None
    rows = {}
    for name, curve in curves.items():
        if not isinstance(curve, dict):
            rows[name] = {"error": curve, "within": False}
        elif point is None or set(curve) != set(reference):
            rows[name] = {"curve": curve, "within": False}
        else:
            average = average_loss(curve, point)
            difference = average / average_loss(reference, point) - 1
            rows[name] = {
                "curve": curve,
                "loss": curve[point],
                "average": average,
                "difference": difference,
                "within": abs(difference) <= BOUND,
            }
    learned = point is not None and reference[point] <= (1 - LEARNED) * reference[min(reference)]
    return {
        "point": point,
        "learned": learned,
        "learned_by": LEARNED,
        "losses": rows,
        "passed": learned and all(row["within"] for row in rows.values()),
    }


def run(kit: Kit) -> dict:
    demo.data_bin(kit)  # before the runs that read it start side by side
    runs = [("rnnsearch", name, flags) for name, flags in PRECISIONS.items()]
    runs += [("lstm", name, flags) for name, flags in LSTM_PRECISIONS.items()]
    started = {
        (model, name): demo.start_training(
            kit,
            f"{model}{name.strip('-')}",
            *_schedule(kit),
            *flags,
            *(ON_CPU.get(name, []) if kit.dry_run else []),
            side_by_side=len(runs),
            model=model,
        )
        for model, name, flags in runs
    }
    curves = {"rnnsearch": {}, "lstm": {}}
    for (model, name), training in started.items():
        try:
            curves[model][name] = demo.validation_losses(training.output())
        except RuntimeError as error:  # recorded; the other precisions still compare
            curves[model][name] = str(error).strip().splitlines()[-1]
    return {
        "updates": DRY_RUN_UPDATES if kit.dry_run else UPDATES,
        "bound": BOUND,
        **compare(curves["rnnsearch"]),
        "lstm": compare(curves["lstm"]),
    }
