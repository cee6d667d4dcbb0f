"""The kit's report (docs/gpu/latest.md), written from the sections' results (one JSON file each).
A section added to the kit adds a line to TITLES and one to RENDER."""

import json
from pathlib import Path
from typing import Dict

from .environment import line

# in the order of the report
TITLES = {
    "unit_tests": "The tests that build models, on the GPU",
    "recurrence": "The decoder's recurrence, each way of computing it",
    "step_profile": "Where a step's time goes",
    "paper_size": "rnnsearch_50 against lstm at the paper's sizes",
    "equivalence": "CPU against GPU",
    "distributed": "Two workers on the GPU against one process",
    "precision_training": "The demo corpus in each precision",
}
HEADER = """# The GPU kit's latest run

Written by `python -m bench.gpu` (`bash bench/gpu/run.sh` on a GPU machine; how to run it, and what
each section measures: `bench/gpu/__init__.py` and docs/gpu-kit.md), which rewrites this page at
every run; the dated log of runs is docs/gpu.md. Each section below carries the machine it ran on
and when; sections may come from separate runs.
"""


def load(results: Path) -> Dict[str, dict]:
    return {
        name: json.loads((results / f"{name}.json").read_text())
        for name in TITLES
        if (results / f"{name}.json").exists()
    }


def write(results: Path, report: Path) -> str:
    sections = load(results)
    parts = [HEADER]
    for number, (name, run) in enumerate(sections.items(), start=1):
        parts.append(f"## {number}. {TITLES[name]}\n")
        parts.append(
            f"{line(run['environment'])}; {run['environment']['date']}; "
            f"{run['seconds']:.0f} s; `{run['command']}`\n"
        )
        if "error" in run:
            parts.append(f"**Did not run**: `{run['error']}`\n")
        else:
            parts.append(RENDER[name](run["result"]))
    text = "\n".join(parts)
    report.write_text(text)
    return text


def _verdict(passed: bool) -> str:
    return "**holds**" if passed else "**does not hold**"


def _unit_tests(result: dict) -> str:
    failures = "".join(f"- `{failure}`\n" for failure in result["failures"])
    return (
        f"{' '.join(result['tests'])} with `--device`: {result['summary']} "
        f"({_verdict(result['passed'])}).\n{failures}"
    )


def _equivalence(result: dict) -> str:
    rows = [
        "| model | mode | TF32 | log-probabilities: max abs. difference (relative) | "
        "gradients: max abs. difference (relative), worst parameter | largest gradient |",
        "|---|---|---|---|---|---|",
    ]
    for tf32, modes in result["values_and_gradients"].items():
        for mode, models in modes.items():
            for model, m in models.items():
                values, gradients = m["log_probs"], m["gradients"]
                rows.append(
                    f"| {model} | {mode} | {tf32} | {values['absolute']:.2e} "
                    f"({values['relative']:.2e}) | {gradients['absolute']:.2e} "
                    f"({gradients['relative']:.2e}), `{m['worst_gradient']}` | "
                    f"{m['largest_gradient']:.3g} |"
                )
    translated = ", ".join(
        f"{t['same']} of {t['sentences']} identical with TF32 {tf32}"
        for tf32, t in result["translations"].items()
    )
    return (
        "\n".join(rows)
        + f"\n\nRelative: the difference over max(1, the largest |value| on the CPU), the largest "
        "log-probability or the largest gradient of any parameter. Each within "
        f"{result['tolerance']:g} with TF32 off, and the demo model's translations identical "
        f"(fairseq-generate, beam 5, CPU against GPU; {translated}): "
        f"{_verdict(result['passed'])}.\n"
    )


def _precision_table(model: str, compared: dict) -> list:
    point = compared["point"]
    at = f"at update {point}" if point is not None else "(float32's curve gave no point)"
    rows = [
        f"| {model}, precision | validation loss {at} | average up to it | against float32 |",
        "|---|---|---|---|",
    ]
    for precision, row in compared["losses"].items():
        if "error" in row:
            rows.append(f"| {precision} | failed: `{row['error']}` | | |")
        elif "average" not in row:
            rows.append(f"| {precision} | not compared | | |")
        else:
            rows.append(
                f"| {precision} | {row['loss']:.3f} | {row['average']:.3f} | "
                f"{row['difference']:+.1%} |"
            )
    return rows


def _curves(model: str, compared: dict) -> str:
    return "; ".join(
        f"{model} {precision}: "
        + ", ".join(f"{updates} {loss:.3f}" for updates, loss in row["curve"].items())
        for precision, row in compared["losses"].items()
        if "curve" in row
    )


def _precision_training(result: dict) -> str:
    point = result["point"]
    learned = "is" if result["learned"] else "is not"
    lstm = result.get("lstm")
    tables = _precision_table("rnnsearch", result)
    curves = _curves("rnnsearch", result)
    if lstm is not None:
        tables += ["", *_precision_table("lstm", lstm)]
        curves += "; " + _curves("lstm", lstm)
    return (
        "\n".join(tables) + f"\n\nrnnsearch on the demo corpus, {result['updates']} updates each "
        f"(bench/gpu/precision_training.py), compared up to update {point}, where float32's "
        f"validation loss still falls, and there {learned} at least {result['learned_by']:.0%} "
        f"below its first. Each average within {result['bound']:.0%} of float32's: "
        f"{_verdict(result['passed'])}. fairseq's lstm at matched sizes, compared the same way "
        "with its own float32, shows whether a precision's difference is the model's.\n\n"
        f"Validation losses by update: {curves}.\n"
    )


def _distributed(result: dict) -> str:
    rows = [
        "| precision, DDP backend | losses: max abs. difference (bound) | parameters: max abs. "
        "difference (relative), worst parameter | tolerance | holds |",
        "|---|---|---|---|---|",
    ]
    for case, m in result["cases"].items():
        if "error" in m:
            rows.append(f"| {case} | failed: `{m['error']}` | | | no |")
            continue
        losses = "n/a" if m["losses"] is None else f"{m['losses']:.3g}"
        rows.append(
            f"| {case} | {losses} ({m['losses_bound']:.3g}) | {m['parameters']:.2e} "
            f"({m['parameters_relative']:.2e}), `{m['worst_parameter']}` | {m['tolerance']:.3g} | "
            f"{'yes' if m['passed'] else 'no'} |"
        )
    return (
        "\n".join(rows)
        + "\n\nTwo fairseq-train workers on the one GPU (gloo, ranks given) against "
        f"one process with --update-freq 2, {result['updates']} updates of the demo model "
        "(bench/gpu/distributed.py); relative: over max(1, the largest |parameter|). "
        f"{_verdict(result['passed'])}.\n"
    )


def _paper_size(result: dict) -> str:
    rows = [
        "| measure | precision | batches | rnnsearch_50 | lstm | rnnsearch / lstm |",
        "|---|---|---|---|---|---|",
    ]
    measures = [
        ("training target words/s", "words_per_second"),
        ("training peak memory (MiB)", "peak_mib"),
    ]
    for label, key in measures:
        for precision, row in result["results"].items():
            if "error" in row:
                continue
            for batching in row["rnnsearch"]["training"]:
                values = [row[m]["training"][batching].get(key) for m in ("rnnsearch", "lstm")]
                rows.append(_measured(label, precision, batching, values))
    decoding = [
        (f"decoding tokens/s, beam {result['beam']}", "tokens_per_second"),
        ("decoding peak memory (MiB)", "peak_mib"),
    ]
    batch = f"{result['sizes']['batch']} sentences"
    for label, key in decoding:
        for precision, row in result["results"].items():
            if "error" not in row:
                values = [row[m]["decoding"].get(key) for m in ("rnnsearch", "lstm")]
                rows.append(_measured(label, precision, batch, values))
    notes = []
    for precision, row in result["results"].items():
        if "error" in row:
            notes.append(f"- {precision} failed: `{row['error']}`")
            continue
        for batching, training in row["rnnsearch"]["training"].items():
            if training.get("compiled"):
                notes.append(
                    f"- {precision}, {batching}: rnnsearch compiled and recorded in "
                    f"{training['compiling_seconds']:.1f} s in all, in its warm-up: "
                    + "; ".join(f"`{line}`" for line in training["compiled"])
                )
            for warning in training.get("fast_path_warnings", []):
                aside = "**rnnsearch's fast path stepped aside**"
                notes.append(f"- {precision}, {batching}: {aside}: `{warning}`")
        shares = "; ".join(
            f"rnnsearch training at {share:.1%} of it with batches of {batching}"
            for batching, share in row["rnnsearch_share_of_peak"].items()
        )
        notes.append(
            f"- {precision}: measured matmul peak {row['matmul_peak_tflops']:.1f} TFLOP/s"
            + (f"; {shares}" if shares else "")
        )
        notes += [
            f"- {precision} {model} {stage} {batching} failed: `{measured['error']}`"
            for model in ("rnnsearch", "lstm")
            for stage, batching, measured in _measurements(row[model])
            if "error" in measured
        ]
    return (
        "\n".join(rows)
        + "\n\n"
        + "\n".join(notes)
        + f"\n- Sizes: {result['sizes']}; {result['flops_per_target_word'] / 1e6:.1f} MFLOP per "
        "target word (bench/benchmark.py's formula).\n"
    )


def _measurements(model: dict):
    """(stage, batches, measured) for each measurement of a model."""
    for batching, measured in model["training"].items():
        yield "training", batching, measured
    yield "decoding", "", model["decoding"]


def _measured(label: str, precision: str, batching: str, values: list) -> str:
    ratio = f"{values[0] / values[1]:.2f}" if all(values) else "n/a"
    cells = [f"{v:,.0f}" if v is not None else "n/a" for v in values]
    return f"| {label} | {precision} | {batching} | {cells[0]} | {cells[1]} | {ratio} |"


def _step_profile(result: dict) -> str:
    rows = ["| step | per target position | idle share | step ms |", "|---|---|---|---|"]
    for label, key in (
        ("training (forward and backward)", "training_step"),
        ("beam search", "beam_search"),
    ):
        step = result[key]
        idle = f"{step['idle_share']:.0%}" if step["idle_share"] is not None else "n/a"
        rows.append(
            f"| {label} | {step['per_target_position']:.1f} {step['unit']} | {idle} | "
            f"{step['step_ms']:.1f} |"
        )
    counts = ["| model, phase | operators | kernels |", "|---|---|---|"]
    for name, phases in result["operator_counts"].items():
        for phase, measured in phases.items():
            kernels = "n/a" if measured["kernels"] is None else f"{measured['kernels']:.1f}"
            counts.append(f"| {name}, {phase} | {measured['operators']:.1f} | {kernels} |")
    return (
        "\n".join(rows)
        + f"\n\nShapes: {result['shape']}. Host synchronizations in the beams' reorders after "
        f"the first of a search: {result['reorder_synchronizations']}.\n\n"
        "Per target position (bench/operator_counts.py; on a CPU the fast path's counts are in "
        "docs/performance.md):\n\n" + "\n".join(counts) + "\n"
    )


def _recurrence(result: dict) -> str:
    rows = [
        "| precision | what | ms | first step ms | peak MiB above the model |",
        "|---|---|---|---|---|",
    ]
    for precision, row in result["results"].items():
        for variant, measured in row.items():
            if "ms" in measured:
                peak = measured["peak_mib"]
                cells = (
                    f"{measured['ms']:.2f} | {measured['first_ms']:.0f} | "
                    f"{'' if peak is None else f'{peak:,.0f}'}"
                )
            else:
                cells = f"{measured.get('error') or measured.get('skipped')} | |"
            rows.append(f"| {precision} | {variant} | {cells} |")
    return (
        "\n".join(rows)
        + f"\n\nShapes: {result['sizes']}; median of {result['repeats']} steps after "
        f"{result['warmup']} (bench/gpu/recurrence.py).\n"
    )


RENDER = {
    "unit_tests": _unit_tests,
    "recurrence": _recurrence,
    "equivalence": _equivalence,
    "precision_training": _precision_training,
    "distributed": _distributed,
    "step_profile": _step_profile,
    "paper_size": _paper_size,
}
