"""docs/gpu.md, written from the sections' results (one JSON file each)."""

import json
from pathlib import Path
from typing import Dict

from .environment import line

TITLES = {
    "unit_tests": "1. The tests that build models, on the GPU",
    "precision_training": "2. The demo corpus in each precision",
    "equivalence": "3. CPU against GPU",
    "paper_size": "4. rnnsearch_50 against lstm at the paper's sizes",
    "step_profile": "5. Where a step's time goes",
}
HEADER = """# The GPU kit's last run

Written by `python -m bench.gpu` (`bash bench/gpu/run.sh` on a GPU machine; how to run it, and what
each section measures: `bench/gpu/__init__.py` and docs/gpu-kit.md). Each section below carries
the machine it ran on and when; sections may come from separate runs.
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
    for name, run in sections.items():
        parts.append(f"## {TITLES[name]}\n")
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
        "| model | TF32 | max abs. difference, log-probabilities | max abs. difference, "
        "gradients (worst parameter) | largest gradient |",
        "|---|---|---|---|---|",
    ]
    for tf32, models in result["values_and_gradients"].items():
        for model, m in models.items():
            rows.append(
                f"| {model} | {tf32} | {m['log_probs']:.2e} | {m['gradients']:.2e} "
                f"(`{m['worst_gradient']}`) | {m['largest_gradient']:.3g} |"
            )
    translated = ", ".join(
        f"{tf32}: {t['same']} of {t['sentences']} identical"
        for tf32, t in result["translations"].items()
    )
    return (
        "\n".join(rows)
        + f"\n\nWithin {result['tolerance']:g} with TF32 off, and the demo model's translations "
        f"identical (fairseq-generate, beam 5, CPU against GPU; {translated}): "
        f"{_verdict(result['passed'])}.\n"
    )


def _precision_training(result: dict) -> str:
    rows = ["| precision | validation loss | against float32 |", "|---|---|---|"]
    for precision, row in result["losses"].items():
        if "error" in row:
            rows.append(f"| {precision} | failed: `{row['error']}` | |")
        else:
            rows.append(f"| {precision} | {row['loss']:.3f} | {row['difference']:+.1%} |")
    return (
        "\n".join(rows) + f"\n\nrnnsearch on the demo corpus, {result['updates']} updates each "
        "(bench/gpu/demo.py); "
        f"each within {result['bound']:.0%} of float32's: {_verdict(result['passed'])}.\n"
    )


def _paper_size(result: dict) -> str:
    rows = [
        "| measure | precision | rnnsearch_50 | lstm | rnnsearch / lstm |",
        "|---|---|---|---|---|",
    ]
    measures = [
        ("training target words/s", "training", "words_per_second"),
        ("training peak memory (MiB)", "training", "peak_mib"),
        (f"decoding tokens/s, beam {result['beam']}", "decoding", "tokens_per_second"),
        ("decoding peak memory (MiB)", "decoding", "peak_mib"),
    ]
    for label, stage, key in measures:
        for precision, row in result["results"].items():
            values = [
                row[m].get(stage, {}).get(key) if "error" not in row[m] else None
                for m in ("rnnsearch", "lstm")
            ]
            ratio = f"{values[0] / values[1]:.2f}" if all(values) else "n/a"
            cells = [f"{v:,.0f}" if v is not None else "n/a" for v in values]
            rows.append(f"| {label} | {precision} | {cells[0]} | {cells[1]} | {ratio} |")
    notes = []
    for precision, row in result["results"].items():
        share = row.get("rnnsearch_share_of_peak")
        notes.append(
            f"- {precision}: measured matmul peak {row['matmul_peak_tflops']:.1f} TFLOP/s"
            + (f"; rnnsearch training at {share:.1%} of it" if share is not None else "")
        )
        for model in ("rnnsearch", "lstm"):
            if "error" in row[model]:
                notes.append(f"- {precision} {model} failed: `{row[model]['error']}`")
    return (
        "\n".join(rows)
        + "\n\n"
        + "\n".join(notes)
        + f"\n- Sizes: {result['sizes']}; {result['flops_per_target_word'] / 1e6:.1f} MFLOP per "
        "target word (bench/benchmark.py's formula).\n"
    )


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


RENDER = {
    "unit_tests": _unit_tests,
    "precision_training": _precision_training,
    "equivalence": _equivalence,
    "paper_size": _paper_size,
    "step_profile": _step_profile,
}
